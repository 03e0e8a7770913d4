//! The Cedar names of Kosha's entities and actions (SPEC §5a), made once per policy set.

use std::collections::HashMap;
use std::str::FromStr;

use cedar_policy::{EntityId, EntityTypeName, EntityUid};

/// `Kosha::Principal`, `Kosha::Tool` and every action's and tool's uid.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub principal: EntityTypeName,
    tools: HashMap<String, (EntityUid, EntityUid)>,
}

impl Names {
    /// The names of the actions `actions` declares.
    pub fn new<'a>(actions: impl IntoIterator<Item = &'a EntityUid>) -> Self {
        let principal = type_name("Kosha::Principal");
        let tool = type_name("Kosha::Tool");
        let tools = actions
            .into_iter()
            .map(|action| {
                let name = action.id().unescaped().to_owned();
                let resource = EntityUid::from_type_name_and_id(tool.clone(), EntityId::new(&name));
                (name, (action.clone(), resource))
            })
            .collect();
        Self { principal, tools }
    }

    /// The action and resource uids of tool `name`, if the schema declares it.
    pub fn tool(&self, name: &str) -> Option<&(EntityUid, EntityUid)> {
        self.tools.get(name)
    }

    /// The principal's uid: `Kosha::Principal::"<user>"`.
    pub fn principal(&self, user: &str) -> EntityUid {
        EntityUid::from_type_name_and_id(self.principal.clone(), EntityId::new(user))
    }

    /// Every tool the schema declares.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}

fn type_name(name: &str) -> EntityTypeName {
    #[expect(clippy::expect_used, reason = "a constant name, tested")]
    EntityTypeName::from_str(name).expect("a valid Cedar type name")
}

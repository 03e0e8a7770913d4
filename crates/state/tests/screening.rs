//! `screening#<id>` items against the AWS emulator (SPEC §4, §8; issue 12): written once,
//! read back until they expire, finished only from `pending` (a second finish, or one for an
//! item that is not there, changes nothing and says which), deleted for an undone deferral.
#![allow(clippy::unwrap_used)]

mod common;

use kosha_contract::screening::{ScreenMatch, ScreenRequest, ScreenResponse, ScreenStatus};
use kosha_state::screening::{Finished, ScreeningItem, ScreeningState};

const ID: &str = "scr_01JDX6Q0Z8K2M3N4P5Q6R7S8T9";

fn request() -> ScreenRequest {
    ScreenRequest {
        name: "Nabil Samir Haddad".into(),
        country: Some("EG".into()),
        date_of_birth: Some("1975-12-14".into()),
    }
}

fn hit() -> ScreeningState {
    ScreeningState::Done(ScreenResponse {
        status: ScreenStatus::PotentialMatch,
        matches: vec![ScreenMatch {
            list_entry_id: "wl_00002".into(),
            name: "Nabil Samir Haddad".into(),
            score: 1.0,
        }],
    })
}

#[tokio::test]
async fn pending_items_finish_once_and_redeliveries_change_nothing() {
    let table = common::fresh_table(&common::sdk_config().await).await;
    let item = ScreeningItem::new(ID.into(), request(), ScreeningState::Pending, 1_000);
    table.put_screening(&item).await.unwrap();
    assert!(
        table.put_screening(&item).await.is_err(),
        "an id is never overwritten"
    );
    assert_eq!(
        table.get_screening(ID, 1_001).await.unwrap(),
        Some(item.clone())
    );

    assert_eq!(
        table.finish_screening(ID, &hit(), 1_010).await.unwrap(),
        Finished::Updated
    );
    let failed = ScreeningState::Failed {
        reason: "name must contain at least one letter".into(),
    };
    assert_eq!(
        table.finish_screening(ID, &failed, 1_020).await.unwrap(),
        Finished::AlreadyFinal
    );
    let read = table.get_screening(ID, 1_030).await.unwrap().unwrap();
    assert_eq!(read.state, hit(), "the first outcome stays");
    assert_eq!(read.request, request());

    let missing = "scr_01JDX6Q1A9B8C7D6E5F4G3H2J1";
    assert_eq!(
        table
            .finish_screening(missing, &hit(), 1_030)
            .await
            .unwrap(),
        Finished::Missing
    );
    assert_eq!(
        table.get_screening(missing, 1_030).await.unwrap(),
        None,
        "no item created"
    );
    assert!(
        table
            .finish_screening(ID, &ScreeningState::Pending, 0)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn expired_items_are_absent_and_deleted_ones_gone() {
    let table = common::fresh_table(&common::sdk_config().await).await;
    let item = ScreeningItem::new(ID.into(), request(), ScreeningState::Pending, 1_000);
    table.put_screening(&item).await.unwrap();
    assert!(
        table
            .get_screening(ID, item.expires_at - 1)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        table.get_screening(ID, item.expires_at).await.unwrap(),
        None
    );
    table.delete_screening(ID).await.unwrap();
    table.delete_screening(ID).await.unwrap();
    assert_eq!(table.get_screening(ID, 1_001).await.unwrap(), None);
}

//! Prints `docs/tools.md` from the tool catalogue:
//! `cargo run -p mcp-gateway --example tools_reference > docs/tools.md`.

fn main() {
    print!(
        "{}",
        mcp_gateway::tools::reference::markdown(&mcp_gateway::tools::catalogue())
    );
}

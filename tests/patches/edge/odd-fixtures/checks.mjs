// Test patch checks: never run. This patch is refused when it loads (its fixture is of no shape the
// engine expands), so no replay reaches here; a checks.mjs must still be there for it to load.
export async function replay(ctx) {
    ctx.record("-", "never-run", false, "odd-fixtures was loaded, but its fixtures should have refused it");
}

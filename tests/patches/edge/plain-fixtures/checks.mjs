// Test patch checks: each fixture's context, as written in the patch's fixtures (format "context"),
// gives the same blocks through the composed module as through the original.
import { pathToFileURL } from "node:url";

export async function replay(ctx) {
    const [role, module] = Object.entries(ctx.modules)[0];
    if (module.error) {
        ctx.record(role, "imports", false, module.error);
        return;
    }
    const before = await import(pathToFileURL(module.spec.original).href);
    const after = await import(pathToFileURL(module.spec.candidate ?? module.spec.original).href);
    ctx.record(role, "has-fixtures", ctx.job.fixtures.length > 0, "no fixture reached the checks");
    for (const fixture of ctx.job.fixtures) {
        const was = JSON.stringify(before.buildPromptBlocks(fixture.context, {}));
        const is = JSON.stringify(after.buildPromptBlocks(fixture.context, {}));
        ctx.record(fixture.name, "same-blocks", was === is && was.includes("again"), `${was} became ${is}`);
    }
    ctx.stats[role] = { proof: "call", fixtures: ctx.job.fixtures.map((f) => f.name) };
}

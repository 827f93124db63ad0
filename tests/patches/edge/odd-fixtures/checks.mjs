// Test patch checks: the composed prompt-bridge module gives what the original gives, and carries
// this patch's function as written (no config literal was put into it).
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const CONTEXT = { systemPrompt: "", messages: [{ role: "user", content: [{ type: "text", text: "hi" }], timestamp: 0 }] };

export async function replay(ctx) {
    const [role, module] = Object.entries(ctx.modules)[0];
    if (module.error) {
        ctx.record(role, "imports", false, module.error);
        return;
    }
    const candidate = module.spec.candidate ?? module.spec.original;
    const text = readFileSync(candidate, "utf8");
    ctx.record(role, "carries-its-function", text.includes("function __testSlotless(blocks) {\n    return blocks;\n}"), "no __testSlotless");
    const before = await import(pathToFileURL(module.spec.original).href);
    const after = await import(pathToFileURL(candidate).href);
    const [was, is] = [JSON.stringify(before.buildPromptBlocks(CONTEXT, {})), JSON.stringify(after.buildPromptBlocks(CONTEXT, {}))];
    ctx.record(role, "same-blocks", was === is, `${was} became ${is}`);
    ctx.stats[role] = { proof: "call" };
}

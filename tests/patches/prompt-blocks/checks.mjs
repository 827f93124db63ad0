// Test patch checks: the prompt-bridge module as composed with every other patch on the file gives
// what the original gives for contexts without directives, and carries this patch's function.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const OWN = "__testPromptBlocks";
const CONTEXT = { systemPrompt: "", messages: [{ role: "user", content: [{ type: "text", text: "hi" }], timestamp: 0 }] };
const PARTS = [{ type: "text", text: "a" }, { type: "thinking", thinking: "b" }];

// What a call gives, in full: an async generator's (buildPromptStream's) yields are collected, a
// promise is awaited, so a changed stream reads as a change.
async function outcome(call) {
    try {
        let value = await call();
        if (value && typeof value[Symbol.asyncIterator] === "function") {
            const yielded = [];
            for await (const item of value) yielded.push(item);
            value = { yielded };
        }
        return JSON.stringify(value === undefined ? "undefined" : value);
    }
    catch (error) {
        return `throws ${error.message}`;
    }
}

export async function replay(ctx) {
    const [role, module] = Object.entries(ctx.modules)[0];
    if (module.error) {
        ctx.record(role, "imports", false, module.error);
        return;
    }
    const candidate = module.spec.candidate ?? module.spec.original;
    ctx.record(role, "carries-its-function", readFileSync(candidate, "utf8").includes(`function ${OWN}(`), `no ${OWN}`);
    const before = await import(pathToFileURL(module.spec.original).href);
    const after = await import(pathToFileURL(candidate).href);
    const calls = { text: (m) => m.contentToText(PARTS, {}), blocks: (m) => m.buildPromptBlocks(CONTEXT, {}),
        stream: (m) => m.buildPromptStream([{ type: "text", text: "hi" }]) };
    for (const [name, call] of Object.entries(calls)) {
        const [was, is] = [await outcome(() => call(before)), await outcome(() => call(after))];
        ctx.record(role, `same-${name}`, was === is, `${was} became ${is}`);
    }
    ctx.stats[role] = { proof: "call" };
}

// The hand-fix-hooks patch's replay, run by senpi-guard's harness with each options module (by role:
// the file as found, and as apply leaves it). Where the module imports (a full install: it needs
// senpi's dependencies), the options are built by senpi's own function and their `hooks` must be
// senpi's own object; where it does not (a dist-only build), the proof is by syntax: both files
// parse (`node --check`) and the patched one gives `hooks` once, as senpi's own.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const KEEP = "HOST_TOOL_DENIAL_HOOKS";

function parses(path) {
    const result = spawnSync(process.execPath, ["--check", path], { encoding: "utf8" });
    return [result.status === 0, (result.stderr || "").split("\n").find((l) => l.includes("Error")) ?? `exit ${result.status}`];
}

// `hooks:` properties in the file's code (comments and strings of senpi's never hold that text)
const hooksIn = (text) => [...text.matchAll(/(^|[{,\s])hooks\s*:\s*([A-Za-z_$][\w$]*|\{)/g)].map((m) => m[2]);

function minimalInput(cwd) {
    return { cwd, model: { id: "claude-sonnet-4-5", reasoning: false }, context: { systemPrompt: "", messages: [] },
        providerSettings: { appendSystemPrompt: false }, tools: [] };
}

async function byCall(ctx, role, module) {
    const tools = await import(new URL("./tools.js", pathToFileURL(module.spec.candidate ?? module.spec.original)).href);
    const own = tools[KEEP];
    const call = (fn) => fn(minimalInput(ctx.job.cwd ?? process.cwd()));
    const after = call(module.candidate ?? module.original);
    ctx.record(role, "options-keep-senpis-hooks", own !== undefined && after.hooks === own,
        "the options the patched module builds do not carry senpi's own HOST_TOOL_DENIAL_HOOKS");
    const before = call(module.original);
    const text = readFileSync(module.spec.original, "utf8");
    ctx.record(role, "a-duplicate-was-what-differed", hooksIn(text).length < 2 || before.hooks !== own
        || after.hooks === own, "the file as found gives hooks twice, yet builds the same options");
}

function bySyntax(ctx, role, module) {
    for (const [which, path] of [["original", module.spec.original], ["patched", module.spec.candidate ?? module.spec.original]]) {
        const [ok, detail] = parses(path);
        ctx.record(role, `${which}-parses`, ok, detail);
    }
    const found = hooksIn(readFileSync(module.spec.candidate ?? module.spec.original, "utf8"));
    ctx.record(role, "hooks-given-once-as-senpis-own", found.length === 1 && found[0] === KEEP,
        `the patched file gives hooks ${found.length} times (${found.join(", ")})`);
}

export async function replay(ctx) {
    for (const [role, module] of Object.entries(ctx.modules)) {
        if (module.error) {
            ctx.stats[role] = { proof: "syntax", why: module.error };
            bySyntax(ctx, role, module);
        }
        else {
            ctx.stats[role] = { proof: "call" };
            await byCall(ctx, role, module);
            bySyntax(ctx, role, module);
        }
    }
}

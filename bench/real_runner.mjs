// One node 24 process: senpi's own loader and runner, a runner without extensions (baseline), one
// with a no-op extension and one with ours, alternated over the same context. stdin: a job; stdout:
// samples in ms. Part 1: the same ~5 MB context, called again and again. Part 2 (job.sizes): calls
// that each add one message to a history of N messages, the handler's own time measured too.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const job = JSON.parse(readFileSync(0, "utf8"));
const loader = await import(pathToFileURL(job.loader).href);
const { ExtensionRunner } = await import(pathToFileURL(job.runner).href);
const runtime = loader.createExtensionRuntime();
const load = async (path) => {
    const loaded = await loader.loadExtensions([path], job.cwd, undefined, runtime);
    if ((loaded.errors ?? []).length) throw new Error(JSON.stringify(loaded.errors[0]));
    return loaded.extensions;
};
// bare: no extension; noop: one whose context handler returns nothing (what senpi's runner costs
// for any extension: its context object, the await); ours: senpi-guard's
const runners = { bare: new ExtensionRunner([], runtime, job.cwd),
    noop: new ExtensionRunner(await load(job.noop), runtime, job.cwd),
    ours: new ExtensionRunner(await load(job.extension), runtime, job.cwd) };
// as senpi binds them: a model with a context window (so the budget measures every call) and an
// appendEntry (so the per-call record is written; here kept in memory)
const entries = [];
runtime.appendEntry = (customType, data) => { entries.push(data); if (entries.length > 64) entries.shift(); };
for (const runner of Object.values(runners)) {
    runner.getModel = () => ({ id: "bench-1", provider: "bench", contextWindow: 100000000 });
}
// the context handlers' own time, measured around each one (noop's and ours', the same wrapper)
const handlerMs = { noop: [], ours: [] };
for (const name of ["noop", "ours"]) {
    for (const ext of runners[name].extensions) {
        ext.handlers.set("context", ext.handlers.get("context").map((handler) => async (event, ctx) => {
            const started = performance.now();
            const result = await handler(event, ctx);
            handlerMs[name].push(performance.now() - started);
            return result;
        }));
    }
}
// prose: no "<" but the tags'; code (tool results only): a comparison on every line, as in source files
const fill = (n, seed, code = false) => {
    const u = code ? `${seed}: const kept = items.filter((item) => item.id < limit);\n` : `${seed}: the plan holds.\n`;
    return u.repeat(Math.ceil(n / u.length)).slice(0, n); };
function context(tagged, code, turns = 250, stamped = false) {
    const [open, close] = tagged ? ["<", ">"] : ["[", "]"];
    const wrap = (tag, body) => `${open}${tag}${close}\n${body}\n${open}/${tag}${close}`;
    const directive = wrap("ultrawork-mode", fill(25000, "ultrawork"));
    const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 };
    let clock = 1_780_000_000_000; // (senpi stamps each message with Date.now())
    const at = () => (stamped ? clock++ : 1);
    const said = (text) => ({ role: "assistant", content: [{ type: "text", text }], api: "x", provider: "x",
        model: "x", usage, stopReason: "stop", timestamp: at() });
    const messages = [];
    for (let t = 0; t < turns; t++) {
        const ask = `${t % 5 === 0 ? directive + "\n\n" : ""}continue with step ${t}: ${fill(300, t)}`;
        const call = { ...said(fill(800, `plan ${t}`)), stopReason: "toolUse" };
        call.content.push({ type: "toolCall", id: `call_${t}`, name: "read", arguments: { path: `src/f${t}.ts` } });
        const result = `${fill(12000, `file ${t}`, code)}\n${wrap("system-reminder", fill(400, `todo ${t % 3}`))}`;
        messages.push({ role: "user", content: [{ type: "text", text: ask }], timestamp: at() }, call,
            { role: "toolResult", toolCallId: `call_${t}`, toolName: "read", content: [{ type: "text", text: result }],
                isError: false, timestamp: at() }, said(fill(1500, `summary ${t}`)));
    }
    return { messages, directive };
}
async function timed(name, messages) {
    const started = performance.now();
    const out = await runners[name].emitContext(messages);
    return [performance.now() - started, out];
}
const report = { node: process.version, contexts: {} };
for (const [label, tagged, code] of [["tagged, prose", true, false], ["tagged, code", true, true],
    ["tag-free, code", false, true]]) {
    const { messages, directive } = context(tagged, code);
    const samples = { bare: [], noop: [], ours: [] };
    for (let round = 0; round < job.warmup + job.rounds; round++) {
        for (const name of round % 2 ? ["ours", "noop", "bare"] : ["bare", "noop", "ours"]) {
            const [ms] = await timed(name, messages);
            if (round >= job.warmup) samples[name].push(ms);
        }
    }
    const [, bare] = await timed("bare", messages);
    const [, ours] = await timed("ours", messages);
    const needle = JSON.stringify(directive).slice(1, -1);
    const copies = (list) => list.filter((m) => JSON.stringify(m.content).includes(needle)).length;
    report.contexts[label] = { messages: messages.length, samples,
        bytes: JSON.stringify(messages).length, bytesOut: JSON.stringify(ours).length,
        copiesIn: copies(bare), copiesOut: copies(ours), unchanged: JSON.stringify(bare) === JSON.stringify(ours) };
}
// Part 2: at each size N, calls on N+1, N+2, … messages (each adds one), the variants alternated;
// ours saw the previous size just before (a warm-up call at N first), as in a session.
report.growth = {};
for (const size of job.sizes ?? []) {
    const { messages } = context(true, false, Math.ceil((size + job.growthCalls + 1) / 4), true);
    const samples = { bare: [], noop: [], ours: [] };
    handlerMs.noop.length = 0;
    handlerMs.ours.length = 0;
    for (const name of ["bare", "noop", "ours"]) {
        await timed(name, messages.slice(0, size));
    }
    handlerMs.noop.length = 0;
    handlerMs.ours.length = 0;
    for (let k = 1; k <= job.growthCalls; k++) {
        const call = messages.slice(0, size + k);
        for (const name of k % 2 ? ["ours", "noop", "bare"] : ["bare", "noop", "ours"]) {
            const [ms] = await timed(name, call);
            samples[name].push(ms);
        }
    }
    const last = entries[entries.length - 1];
    report.growth[size] = { messages: size, samples, handler: { noop: handlerMs.noop.slice(), ours: handlerMs.ours.slice() },
        bytes: JSON.stringify(messages.slice(0, size)).length, record: last };
}
process.stdout.write(JSON.stringify(report));

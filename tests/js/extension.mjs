// Runs a rendered extension's `context` handler directly, for property tests. argv[2] is the
// extension file. One JSON request per stdin line: {"cases": [messages, …]} -> {"outputs":
// [{"whole": messages, "prefixes": [messages, …]}, …]} (inputs are deep-frozen: mutation throws).
// Or {"scenario": {"ctx": {...}, "steps": [...]}} -> {"steps": [...]}: one session through a fake
// senpi (its UI calls, aborts and stderr recorded, and the entries each step appended), for the
// status, /senpi-guard and budget code and where a call's record goes.
// Or {"history": [{"events": [name, …], "messages": [...]}, …]} -> {"calls": [{"incremental",
// "full", "record"}, …]}: each step's session events, then one `context` call on its messages (a
// fresh frozen copy, as senpi hands in), beside the stateless full rewrite and the call's record.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const extension = await import(pathToFileURL(process.argv[2]).href);
const handlers = new Map();
const commands = new Map();
const records = [];
extension.default({
    on: (event, h) => handlers.set(event, [...(handlers.get(event) ?? []), h]),
    registerCommand: (name, options) => commands.set(name, options),
    appendEntry: (customType, data) => records.push({ customType, data }),
});
const handler = handlers.get("context")[0];
const stdoutWrite = process.stdout.write.bind(process.stdout);
const stderrWrite = process.stderr.write.bind(process.stderr);
const run = (messages) => {
    const result = handler({ type: "context", messages });
    return result === undefined ? messages : result.messages;
};
function freeze(value) {
    if (value !== null && typeof value === "object") {
        Object.freeze(value);
        Object.values(value).forEach(freeze);
    }
    return value;
}
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) {
        continue;
    }
    const request = JSON.parse(line);
    if (request.history) {
        process.stdout.write(JSON.stringify({ calls: await history(request.history) }) + "\n");
        continue;
    }
    if (request.scenario) {
        process.stdout.write(JSON.stringify({ steps: await scenario(request.scenario) }) + "\n");
        continue;
    }
    const { cases } = request;
    const outputs = cases.map((messages) => {
        const frozen = freeze(structuredClone(messages));
        const whole = run(frozen);
        const prefixes = messages.map((_, k) => run(freeze(structuredClone(messages.slice(0, k + 1)))));
        return { whole, prefixes, mutated: JSON.stringify(frozen) !== JSON.stringify(messages) };
    });
    // each case once more, right after another case (the handler remembers the previous call)
    cases.forEach((messages, index) => {
        outputs[index].again = run(freeze(structuredClone(messages)));
    });
    process.stdout.write(JSON.stringify({ outputs }) + "\n");
}

// A fake senpi context: `spec` sets what senpi would report; `throws` makes every accessor throw.
function fakeContext(spec, log) {
    const ctx = {
        hasUI: spec.hasUI ?? true, mode: spec.mode ?? "rpc",
        ui: { setStatus: (key, text) => log.push(["setStatus", key, text]), notify: (text, type) => log.push(["notify", text, type]) },
        model: spec.window ? { id: "m-1", contextWindow: spec.window } : undefined,
        sessionManager: { getSessionId: () => spec.sessionId ?? "s-1" },
        getSystemPrompt: () => spec.systemPrompt ?? "",
        getContextUsage: () => (spec.usageTokens === undefined ? undefined
            : { tokens: spec.usageTokens, contextWindow: spec.window, percent: null }),
        isCompacting: () => spec.compacting === true,
        isIdle: () => spec.idle !== false,
        abort: () => log.push(["abort"]),
    };
    if (!spec.throws) {
        return ctx;
    }
    return new Proxy(ctx, { get: () => { throw new Error("runner is not active"); } });
}

async function scenario({ ctx: spec, steps }) {
    const out = [];
    for (const step of steps) {
        const log = [];
        const ctx = fakeContext({ ...spec, ...(step.ctx ?? {}) }, log);
        process.stderr.write = (text) => log.push(["stderr", String(text)]) > 0;
        if (step.command) {
            process.stdout.write = (text) => log.push(["stdout", String(text)]) > 0;
        }
        let result = null;
        try {
            if (step.context) {
                const r = handlers.get("context")[0]({ type: "context", messages: freeze(structuredClone(step.context)) }, ctx);
                result = r === undefined ? null : r.messages;
            }
            for (const [event, payload] of Object.entries(step.events ?? {})) {
                for (const h of handlers.get(event) ?? []) {
                    await h({ type: event, ...payload }, ctx);
                }
            }
            if (step.command) {
                await commands.get("senpi-guard").handler("", ctx);
            }
        }
        finally {
            process.stderr.write = stderrWrite;
            process.stdout.write = stdoutWrite;
        }
        out.push({ result, log, records: records.splice(0).map((r) => r.customType) });
    }
    return out;
}

async function history(steps) {
    const calls = [];
    for (const step of steps) {
        for (const event of step.events ?? []) {
            for (const h of handlers.get(event) ?? []) {
                await h({ type: event }, {});
            }
        }
        records.length = 0;
        const incremental = run(freeze(structuredClone(step.messages)));
        const fresh = extension.__senpiGuardDedupeMessages(freeze(structuredClone(step.messages)));
        calls.push({ incremental, full: fresh ?? step.messages, record: records.length === 1 ? records[0].data : null });
    }
    return calls;
}

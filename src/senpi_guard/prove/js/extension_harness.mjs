// senpi-guard's replay of the extension layer: loads the rendered extension, runs the patch's
// fixture sessions through its `context` handler (a minimal host: an object offering on(event,
// handler)), and, when the installed senpi's own extension loader and runner import, through them
// too; then runs the patch's named checks (extension-checks.mjs). stdin: one JSON job; stdout: one
// JSON report. With `job.measure` (fixture sessions), also what the extension leaves of each one's
// text (the figures senpi-guard ships: layers/figures.py).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as nodeModule from "node:module";
import { dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { job, report } from "./protocol.mjs";
const results = [];
const record = (fixture, check, ok, detail) => results.push({ fixture, check, ok: Boolean(ok), detail: ok ? "" : String(detail ?? "") });

function freeze(value) {
    if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
        Object.freeze(value);
        for (const key of Object.keys(value)) {
            freeze(value[key]);
        }
    }
    return value;
}

// The UTF-8 bytes of the messages' texts (a string content, or its text parts).
function textBytes(messages) {
    let total = 0;
    for (const message of messages) {
        const content = message?.content;
        const parts = typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : [];
        for (const part of parts) {
            total += part?.type === "text" && typeof part.text === "string" ? Buffer.byteLength(part.text, "utf8") : 0;
        }
    }
    return total;
}

async function minimalHost() {
    const module = await import(pathToFileURL(job.extension).href);
    const handlers = [];
    module.default({ on: (event, handler) => event === "context" && handlers.push(handler) });
    if (handlers.length !== 1) {
        throw new Error(`the extension registered ${handlers.length} context handlers, not 1`);
    }
    return (messages) => {
        const result = handlers[0]({ type: "context", messages }, { cwd: job.cwd });
        return result && Array.isArray(result.messages) ? result.messages : messages;
    };
}

// Every file node loads from here on outside this replay's own folder (senpi's loader, runner and
// their dependencies), with the sha256 of its bytes as node read them: the proof through senpi's
// runner holds while these bytes are the same (node >= 22.15 has module.registerHooks; without it
// `imported` is null and the proof is never reused by content).
const ours = dirname(fileURLToPath(import.meta.url));
let imported = null;
function listImports() {
    if (typeof nodeModule.registerHooks !== "function") {
        return;
    }
    imported = {};
    nodeModule.registerHooks({
        load(url, context, nextLoad) {
            const loaded = nextLoad(url, context);
            if (url.startsWith("file:")) {
                const path = fileURLToPath(url);
                if (!path.startsWith(ours + "/") && !(path in imported)) {
                    imported[path] = createHash("sha256").update(readFileSync(path)).digest("hex");
                }
            }
            return loaded;
        },
    });
}

// senpi's own loader and runner, when they import (a dist-only build lacks their dependencies:
// then the minimal host alone proves the extension, and the report says why).
let hostUnavailable = null;
async function senpiHost() {
    if (!job.host) {
        return null;
    }
    let loader;
    let runnerModule;
    listImports();
    try {
        loader = await import(pathToFileURL(job.host.loader).href);
        runnerModule = await import(pathToFileURL(job.host.runner).href);
    }
    catch (error) {
        hostUnavailable = String(error?.message ?? error).split("\n")[0].slice(0, 300);
        return null;
    }
    const runtime = loader.createExtensionRuntime();
    const loaded = await loader.loadExtensions([job.extension], job.cwd, undefined, runtime);
    const errors = loaded.errors ?? [];
    const runner = new runnerModule.ExtensionRunner(loaded.extensions ?? loaded, runtime, job.cwd);
    return { errors, emit: (messages) => runner.emitContext(messages) };
}

async function main() {
    const patch = await import(pathToFileURL(job.checks).href);
    const run = await minimalHost();
    let senpi = null;
    try {
        senpi = await senpiHost();
    }
    catch (error) {
        record("-", "loads-in-senpi", false, `senpi's extension runner could not load it: ${error?.message ?? error}`);
    }
    if (senpi) {
        record("-", "loads-in-senpi", senpi.errors.length === 0, JSON.stringify(senpi.errors[0]));
    }
    for (const odd of [undefined, null, 7, "x", [null, 5, "s"], [{ role: "user", content: [null] }]]) {
        try {
            run(odd);
            record("-", "odd-events-never-throw", true);
        }
        catch (error) {
            record("-", "odd-events-never-throw", false, `messages=${JSON.stringify(odd)}: ${error}`);
        }
    }
    for (const fixture of job.fixtures) {
        const messages = fixture.context.messages;
        const input = freeze(structuredClone(messages));
        const inputBefore = JSON.stringify(input);
        let output = input;
        let error = null;
        try {
            output = run(input);
        }
        catch (e) {
            error = String(e && e.stack ? e.stack.split("\n").slice(0, 2).join(" ") : e);
        }
        const prefixes = [];
        for (let k = 1; k < messages.length && error === null; k++) {
            prefixes.push(run(freeze(structuredClone(messages.slice(0, k)))));
        }
        const r = {
            job, fixture, input, output, error, prefixes, inputBefore, inputAfter: JSON.stringify(input),
            sameObjects: input.map((m, index) => ({ index, same: output[index] === m,
                differs: JSON.stringify(output[index]) !== JSON.stringify(m) })),
        };
        const wanted = new Set(fixture.checks);
        for (const [name, check] of Object.entries(patch.checks)) {
            if (check.when ? check.when(r) : wanted.has(name)) {
                try {
                    const [ok, detail] = check.run(r);
                    record(fixture.name, name, ok, detail);
                }
                catch (e) {
                    record(fixture.name, name, false, `the check threw ${e}`);
                }
            }
        }
        if (senpi) {
            const through = await senpi.emit(structuredClone(messages));
            record(fixture.name, "senpi-runner-agrees", JSON.stringify(through) === JSON.stringify(output),
                "senpi's own runner gave different messages than a direct call");
        }
    }
    const sizes = {};
    for (const fixture of job.measure ?? []) {
        const messages = fixture.context.messages;
        sizes[fixture.name] = { before: textBytes(messages), after: textBytes(run(freeze(structuredClone(messages)))) };
    }
    return { node: process.version, host: senpi ? "senpi" : "minimal", hostUnavailable, imported: senpi ? imported : null, results, sizes };
}

await report(main);

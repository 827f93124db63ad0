// One node process: three dedupe designs on the same incident-shaped prompts (see payload_compare.py).
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(0, "utf8"));
const ours = new Function(`${readFileSync(job.payload, "utf8")}\nreturn __senpiGuardDedupe;`)();
const { buildPromptBlocks } = await import(pathToFileURL(job.bridge).href);

// (b) keep-first as the bug report describes it: <ultrawork-mode> only, per text block, a later
// byte-identical copy replaced by a marker that is itself wrapped in the tag.
function keepFirstWrapped(blocks) {
    const seen = new Set();
    return blocks.map((block) => {
        if (block.type !== "text") {
            return block;
        }
        const text = block.text.replace(/<ultrawork-mode>[\s\S]*?<\/ultrawork-mode>/g, (span) => {
            if (seen.has(span)) {
                return "<ultrawork-mode>(repeated directive omitted; see the first copy)</ultrawork-mode>";
            }
            seen.add(span);
            return span;
        });
        return text === block.text ? block : { ...block, text };
    });
}

// (c) keep-last like upstream's: regex per text block, the last span kept, every earlier span
// replaced by a placeholder whatever its content.
function keepLast(blocks) {
    const spans = [];
    blocks.forEach((block, index) => {
        if (block.type === "text") {
            for (const m of block.text.matchAll(/<ultrawork-mode>[\s\S]*?<\/ultrawork-mode>/g)) {
                spans.push({ index, start: m.index, end: m.index + m[0].length });
            }
        }
    });
    const out = blocks.slice();
    for (const span of spans.slice(0, -1).reverse()) {
        const text = out[span.index].text;
        out[span.index] = { ...out[span.index], text: text.slice(0, span.start) + "[ultrawork-mode directive superseded by a later copy]" + text.slice(span.end) };
    }
    return out;
}

const designs = { "(a) senpi-guard": ours, "(b) keep-first, wrapped marker": keepFirstWrapped, "(c) keep-last (upstream-like)": keepLast };
const texts = (blocks) => blocks.filter((b) => b.type === "text").map((b) => b.text);
const bytes = (blocks) => texts(blocks).reduce((n, t) => n + Buffer.byteLength(t), 0);

function history(blocks) {
    const start = blocks.findIndex((b) => b.type === "text" && b.text === "<conversation_history>\n");
    const end = blocks.findIndex((b) => b.type === "text" && b.text === "\n</conversation_history>");
    return start === -1 || end === -1 ? "" : texts(blocks.slice(start + 1, end)).join("\u0001");
}

function median(values) {
    const sorted = [...values].sort((x, y) => x - y);
    return sorted[Math.floor(sorted.length / 2)];
}

const rows = [];
for (const fixture of job.fixtures) {
    const messages = fixture.context.messages;
    const raw = buildPromptBlocks({ messages });
    const distinct = new Set(texts(raw).flatMap((t) => t.match(/<ultrawork-mode>[\s\S]*?<\/ultrawork-mode>/g) ?? []));
    const names = Object.keys(designs);
    const metrics = {};
    {
        // Correctness figures first; the garbage they make is collected before any timing.
        const prefixes = [];
        for (let k = 1; k <= messages.length; k++) {
            prefixes.push(buildPromptBlocks({ messages: messages.slice(0, k) }));
        }
        for (const name of names) {
            const fn = designs[name];
            const out = fn(raw);
            const joined = texts(out).join("\u0001");
            const full = history(out);
            metrics[name] = {
                outputBytes: bytes(out),
                surviving: [...distinct].filter((span) => joined.includes(span)).length,
                stable: prefixes.filter((p) => full.startsWith(history(fn(p)))).length,
                prefixes: prefixes.length,
            };
        }
    }
    globalThis.gc?.();
    // Timing: warm every design up, then time them round-robin so GC and JIT state are shared fairly.
    for (const name of names) {
        for (let i = 0; i < 30; i++) {
            designs[name](raw);
        }
    }
    const reps = Math.max(31, Math.round(job.repeatBudget / messages.length));
    const times = Object.fromEntries(names.map((name) => [name, []]));
    for (let r = 0; r < reps; r++) {
        for (let j = 0; j < names.length; j++) {
            const name = names[(r + j) % names.length];
            const t0 = process.hrtime.bigint();
            designs[name](raw);
            times[name].push(Number(process.hrtime.bigint() - t0) / 1000);
        }
    }
    for (const name of names) {
        rows.push({ fixture: fixture.name, design: name, inputBytes: bytes(raw), distinct: distinct.size,
            ...metrics[name], medianUs: median(times[name]), reps });
    }
}
process.stdout.write(JSON.stringify({ node: process.version, rows }));

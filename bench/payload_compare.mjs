// One node process: the injected dedupe against the bug report's hand hot-fix and upstream's shipped
// keep-last, on the same prompts (see payload_compare.py). Timed calls get fresh block objects
// (made outside the timer): the hot-fix assigns block.text in place.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(0, "utf8"));
const payload = (path) => new Function(`${readFileSync(path, "utf8")}\nreturn __senpiGuardDedupe;`)();
const { buildPromptBlocks } = await import(pathToFileURL(job.bridge).href);
const { dedupeUltraworkBlocks } = await import(pathToFileURL(job.upstream).href);

// The hand hot-fix, written here from its description in the project facts: <ultrawork-mode> only;
// per text block, indexOf for the opening tag and the next closing tag after it (none: the rest of
// that block is left alone); the first span seen anywhere is remembered; a later span byte-identical
// to it becomes the wrapped marker; any other span is left as is. Assigns block.text in place.
const OPEN = "<ultrawork-mode>";
const CLOSE = "</ultrawork-mode>";
const HOTFIX_MARKER = "<ultrawork-mode>[directive unchanged - identical to the first occurrence above]</ultrawork-mode>";
function handHotFix(blocks) {
    let first = null;
    for (const block of blocks) {
        if (block.type !== "text") {
            continue;
        }
        let text = block.text;
        let changed = false;
        for (let at = text.indexOf(OPEN); at !== -1;) {
            const end = text.indexOf(CLOSE, at + OPEN.length);
            if (end === -1) {
                break;
            }
            const span = text.slice(at, end + CLOSE.length);
            if (first === null) {
                first = span;
            }
            else if (span === first) {
                text = text.slice(0, at) + HOTFIX_MARKER + text.slice(end + CLOSE.length);
                changed = true;
                at = text.indexOf(OPEN, at + HOTFIX_MARKER.length);
                continue;
            }
            at = text.indexOf(OPEN, end + CLOSE.length);
        }
        if (changed) {
            block.text = text;
        }
    }
    return blocks;
}

const designs = {
    "(a) senpi-guard, 7 tags": payload(job.payloadAll),
    "(a1) senpi-guard, <ultrawork-mode> only": payload(job.payloadOne),
    "(a2) senpi-guard, tags = \"auto\"": payload(job.payloadAuto),
    "(b) hand hot-fix (bug report)": handHotFix,
    "(c) upstream keep-last (shipped)": (blocks) => dedupeUltraworkBlocks(blocks).blocks,
};
const texts = (blocks) => blocks.filter((b) => b.type === "text").map((b) => b.text);
const bytes = (blocks) => texts(blocks).reduce((n, t) => n + Buffer.byteLength(t), 0);
const fresh = (blocks) => blocks.map((b) => ({ ...b }));

function median(values) {
    const sorted = [...values].sort((x, y) => x - y);
    return sorted[Math.floor(sorted.length / 2)];
}

function sameLengthBlocks(count, size) {
    // a plugin that stamps a counter into each copy: `count` distinct spans of one length
    const blocks = [];
    for (let n = 0; n < count; n++) {
        const body = `${String(n).padStart(6, "0")} ` + "r".repeat(size - OPEN.length - CLOSE.length - 7);
        blocks.push({ type: "text", text: `${OPEN}${body}${CLOSE}` });
    }
    return blocks;
}

// Turn by turn: is the history turn k sent (the text inside <conversation_history>) a prefix of
// the history turn k+1 sent? That is what a provider's prompt cache needs.
function history(blocks) {
    const all = texts(blocks);
    const start = all.indexOf("<conversation_history>\n");
    const end = all.indexOf("\n</conversation_history>");
    return start === -1 || end === -1 ? "" : all.slice(start + 1, end).join("\u0001");
}

function turnByTurn(fn, messages) {
    let stable = 0;
    let previous = null;
    for (let k = 1; k <= messages.length; k++) {
        const now = history(fn(fresh(buildPromptBlocks({ messages: messages.slice(0, k) }))));
        if (previous !== null && now.startsWith(previous)) {
            stable++;
        }
        previous = now;
    }
    return { stable, turns: messages.length - 1 };
}

function measure(name, raw, messages) {
    const fns = Object.entries(designs);
    const distinct = new Set(texts(raw).flatMap((t) => t.match(/<ultrawork-mode>[\s\S]*?<\/ultrawork-mode>/g) ?? []));
    const metrics = {};
    for (const [design, fn] of fns) {
        const out = fn(fresh(raw));
        const joined = texts(out).join("\u0001");
        metrics[design] = {
            outputBytes: bytes(out),
            surviving: [...distinct].filter((span) => joined.includes(span)).length,
            ...(messages ? turnByTurn(fn, messages) : {}),
        };
    }
    globalThis.gc?.();
    for (const [, fn] of fns) {
        for (let i = 0; i < 20; i++) {
            fn(fresh(raw));
        }
    }
    const reps = Math.max(21, Math.round(job.repeatBudget / Math.max(1, raw.length / 10)));
    const times = Object.fromEntries(fns.map(([design]) => [design, []]));
    for (let r = 0; r < reps; r++) {
        for (let j = 0; j < fns.length; j++) {
            const [design, fn] = fns[(r + j) % fns.length];
            const input = fresh(raw);
            const t0 = process.hrtime.bigint();
            fn(input);
            times[design].push(Number(process.hrtime.bigint() - t0) / 1000);
        }
    }
    return fns.map(([design]) => ({ fixture: name, design, inputBytes: bytes(raw), distinct: distinct.size,
        ...metrics[design], medianUs: median(times[design]), reps }));
}

const rows = [];
for (const fixture of job.fixtures) {
    const messages = fixture.context.messages;
    rows.push(...measure(fixture.name, buildPromptBlocks({ messages }), messages));
}
for (const count of job.sameLength) {
    rows.push(...measure(`${count} distinct same-length`, sameLengthBlocks(count, 25_000), null));
}
process.stdout.write(JSON.stringify({ node: process.version, rows }));

// The extension layer's named checks, run by senpi-guard's extension harness after a fixture
// session went through the installed-to-be extension. Each returns [ok, detail]. Spans are found
// here by a plain scan per tag (the dist patch's checks' own), independently of the extension's code.
import { spansOf } from "./checks.mjs";

const PROCESSED = new Set(["user", "custom", "toolResult"]);

function textsOf(message) {
    if (message === null || typeof message !== "object" || !PROCESSED.has(message.role)) {
        return [];
    }
    if (typeof message.content === "string") {
        return [message.content];
    }
    return Array.isArray(message.content)
        ? message.content.filter((p) => p && p.type === "text" && typeof p.text === "string").map((p) => p.text) : [];
}

const spans = (tags, text) => spansOf(tags, text, false);

const isBoundary = (m) => m && m.role === "assistant" && Array.isArray(m.diagnostics)
    && m.diagnostics.some((d) => d && d.type === "claude_sdk_oauth_compact_boundary");

// The messages split into epochs at each compact boundary (the boundary closes its epoch).
function epochs(messages) {
    const out = [[]];
    messages.forEach((m, i) => {
        out[out.length - 1].push(i);
        if (isBoundary(m)) {
            out.push([]);
        }
    });
    return out;
}

const markerOf = (job, tag) => job.marker.split("{tag}").join(tag);

function perEpoch(r, visit) {
    const problems = [];
    for (const indexes of epochs(r.input)) {
        const inputs = indexes.flatMap((i) => textsOf(r.input[i]));
        const outputs = indexes.flatMap((i) => textsOf(r.output[i]));
        visit(inputs, outputs, problems);
    }
    return [problems.length === 0, problems.slice(0, 3).join("; ")];
}

export const checks = {
    runs: { when: () => true, run: (r) => [r.error === null, `the handler failed: ${r.error}`] },
    "every-directive-survives": {
        run: (r) => perEpoch(r, (inputs, outputs, problems) => {
            const joined = outputs.join("\u0001");
            for (const span of new Set(inputs.flatMap((t) => spans(r.job.tags, t).map((s) => s.text)))) {
                if (!joined.includes(span)) {
                    problems.push(`a ${span.length}-byte directive is gone from its epoch`);
                }
            }
        }),
    },
    "one-copy-per-epoch": {
        run: (r) => perEpoch(r, (inputs, outputs, problems) => {
            const counts = new Map();
            for (const s of outputs.flatMap((t) => spans(r.job.tags, t))) {
                if (s.text.length > markerOf(r.job, s.tag).length) {
                    counts.set(s.text, (counts.get(s.text) ?? 0) + 1);
                }
            }
            for (const [span, n] of counts) {
                if (n !== 1) {
                    problems.push(`${n} full copies of a ${span.length}-byte directive in one epoch`);
                }
            }
        }),
    },
    "only-repeats-replaced": {
        // Undo each marker with the span it stands for (the first earlier span of its tag in the
        // epoch that the input has at that place): the input must come back exactly.
        run: (r) => perEpoch(r, (inputs, outputs, problems) => {
            if (inputs.length !== outputs.length) {
                problems.push("the number of texts changed");
                return;
            }
            const earlier = new Set();
            inputs.forEach((input, k) => {
                const output = outputs[k];
                if (input !== output) {
                    let rebuilt = output;
                    for (const s of spans(r.job.tags, input)) {
                        const marker = markerOf(r.job, s.tag);
                        if (earlier.has(s.text) && rebuilt.includes(marker)) {
                            rebuilt = rebuilt.replace(marker, s.text);
                        }
                        earlier.add(s.text);
                    }
                    if (rebuilt !== input) {
                        problems.push(`text ${k} changed beyond repeated directives`);
                    }
                }
                else {
                    spans(r.job.tags, input).forEach((s) => earlier.add(s.text));
                }
            });
        }),
    },
    "markers-well-formed": {
        run(r) {
            const bad = r.job.tags.filter((tag) => Buffer.byteLength(markerOf(r.job, tag)) > r.job.maxMarkerBytes
                || r.job.tags.some((t) => markerOf(r.job, tag).includes(`<${t}>`)));
            return [bad.length === 0, `the marker of ${bad[0]} is too long or holds an opening tag`];
        },
    },
    "prefix-stable": {
        // senpi hashes each sent message every call: a message's output may depend only on it and
        // the messages before it, so each prefix's outputs equal the first outputs of the whole.
        run(r) {
            const whole = r.output.map((m) => JSON.stringify(m));
            const bad = r.prefixes.findIndex((out) => out.some((m, i) => JSON.stringify(m) !== whole[i]));
            return [bad === -1, `the outputs of the first ${bad + 1} messages changed once more messages followed`];
        },
    },
    "input-not-mutated": { run: (r) => [r.inputAfter === r.inputBefore, "the handler changed the messages it was given"] },
    "same-objects": {
        run(r) {
            const changed = r.sameObjects.filter((x) => !x.same && !x.differs);
            return [changed.length === 0, `message ${changed[0]?.index} is a new object with the same content`];
        },
    },
    "broken-left-alone": {
        run(r) {
            const broken = r.input.map((m, i) => [m, i]).filter(([m]) => textsOf(m).some((t) => /never closed|stray|<ultrawork-mode><ultrawork-mode>/.test(t)));
            const changed = broken.filter(([m, i]) => JSON.stringify(m) !== JSON.stringify(r.output[i]));
            return [changed.length === 0, `a text with unclosed, nested or stray tags was changed (message ${changed[0]?.[1]})`];
        },
    },
};

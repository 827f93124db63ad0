// The directive-dedupe patch's named checks, run by senpi-guard's harness after replaying each
// fixture through the original and the patched module. Each check returns [ok, detail]; `when`
// says whether it applies (default: the fixture lists it). These checks do not reuse the
// payload's code: spans are found here by a plain scan per tag (what a lazy regex would match).

// Outermost <tag>…</tag> spans of one text (the extension's checks use it too).
export function spansOf(tags, text, outermostOnly) {
    const spans = [];
    for (const tag of tags) {
        // what /<tag>[\s\S]*?<\/tag>/g matches, found with indexOf (a lazy regex over 25 KB spans
        // is the slowest part of a replay)
        const open = `<${tag}>`;
        const close = `</${tag}>`;
        for (let at = text.indexOf(open); at !== -1;) {
            const end = text.indexOf(close, at + open.length);
            if (end === -1) {
                break;
            }
            spans.push({ tag, start: at, end: end + close.length, text: text.slice(at, end + close.length) });
            at = text.indexOf(open, end + close.length);
        }
    }
    if (!outermostOnly) {
        return spans;
    }
    spans.sort((a, b) => a.start - b.start || b.end - a.end);
    const outer = [];
    let reach = -1;
    for (const s of spans) {
        if (s.start >= reach) {
            outer.push(s);
            reach = s.end;
        }
    }
    return outer;
}

function countSpans(tags, texts, outermostOnly) {
    const counts = new Map();
    for (const text of texts) {
        for (const s of spansOf(tags, text, outermostOnly)) {
            counts.set(s.text, (counts.get(s.text) ?? 0) + 1);
        }
    }
    return counts;
}

function contextTexts(context) {
    const texts = [];
    for (const message of context.messages) {
        const parts = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content ?? [];
        for (const part of parts) {
            if (part && part.type === "text" && typeof part.text === "string") {
                texts.push(part.text);
            }
        }
    }
    return texts;
}

function markersOf(job) {
    return job.tags.map((tag) => [tag, job.marker.split("{tag}").join(tag)]);
}

function countMarkers(markers, text) {
    const counts = {};
    for (const [tag, marker] of markers) {
        let n = 0;
        for (let at = text.indexOf(marker); at !== -1; at = text.indexOf(marker, at + marker.length)) {
            n++;
        }
        if (n) {
            counts[tag] = n;
        }
    }
    return counts;
}

// Walk original and patched text together: they may differ only where the patched text has a tag's
// marker and the original has a span of that tag whose exact text occurred earlier.
function align(markers, orig, cand) {
    const repls = [];
    let i = 0;
    let j = 0;
    for (;;) {
        while (i < orig.length && j < cand.length && orig.charCodeAt(i) === cand.charCodeAt(j)) {
            i++;
            j++;
        }
        if (i === orig.length && j === cand.length) {
            return { ok: true, repls };
        }
        const hit = markers.find(([tag, marker]) => cand.startsWith(marker, j) && orig.startsWith(`<${tag}>`, i));
        if (!hit) {
            return { ok: false, repls, detail: `texts differ at byte ${i} with no marker there: ${JSON.stringify(orig.slice(i, i + 40))} vs ${JSON.stringify(cand.slice(j, j + 40))}` };
        }
        const close = `</${hit[0]}>`;
        const end = orig.indexOf(close, i);
        if (end === -1) {
            return { ok: false, repls, detail: `a marker replaced an unclosed <${hit[0]}> at byte ${i}` };
        }
        const span = orig.slice(i, end + close.length);
        if (orig.indexOf(span) >= i) {
            return { ok: false, repls, detail: `the first copy of a <${hit[0]}> span (byte ${i}) was replaced` };
        }
        repls.push([i, end + close.length, j, j + hit[1].length]);
        i = end + close.length;
        j += hit[1].length;
    }
}

function mapPosition(repls, p) {
    let delta = 0;
    for (const [os, oe, cs, ce] of repls) {
        if (oe <= p) {
            delta += (ce - cs) - (oe - os);
        }
        else if (os < p) {
            return cs;
        }
        else {
            break;
        }
    }
    return p + delta;
}

function commonPrefix(a, b) {
    const n = Math.min(a.length, b.length);
    let i = 0;
    while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) {
        i++;
    }
    return i;
}

// What every check below looks at, computed once per fixture.
export function prepare(run) {
    const { job, util, original, candidate } = run;
    const markers = markersOf(job);
    const orig = util.joined(original);
    const cand = util.joined(candidate);
    return {
        ...run, markers, orig, cand,
        aligned: align(markers, orig, cand),
        distinct: new Set(countSpans(job.tags, util.textsOf(original), false).keys()),
    };
}

// Each prefix of a growing session, patched, must be a prefix of the next and of the whole,
// up to the markers (compared through the alignment with the unpatched text).
function prefixStable(r) {
    const n = r.fixture.context.messages.length;
    const views = [];
    for (let k = 1; k <= n; k++) {
        const part = r.pipeline.run({ ...r.fixture.context, messages: r.fixture.context.messages.slice(0, k) });
        const orig = r.util.joined(part.original);
        const cand = r.util.joined(part.candidate);
        views.push({ orig, cand, repls: align(r.markers, orig, cand).repls });
    }
    const full = { orig: r.orig, cand: r.cand, repls: r.aligned.repls };
    let stable = 0;
    let firstBad = null;
    for (let k = 0; k < views.length; k++) {
        const pairs = k + 1 < views.length ? [[views[k], full], [views[k], views[k + 1]]] : [[views[k], full]];
        const ok = pairs.every(([small, big]) => {
            const p = commonPrefix(small.orig, big.orig);
            const a = small.cand.slice(0, mapPosition(small.repls, p));
            const b = big.cand.slice(0, mapPosition(big.repls, p));
            return a.startsWith(b) || b.startsWith(a);
        });
        stable += ok ? 1 : 0;
        firstBad = !ok && firstBad === null ? k + 1 : firstBad;
    }
    r.prefixes = { stable, total: views.length };
    return [firstBad === null, `${views.length - stable} of ${views.length} prefixes are not stable (first: ${firstBad} messages)`];
}

function upstreamKeepsDirectives(r) {
    const after = r.pipeline.upstream.candidate(r.candidate);
    const finalText = after.blocks ? r.util.joined(after.blocks) : "";
    const missing = [...r.distinct].filter((span) => !finalText.includes(span));
    const untouched = JSON.stringify(after.blocks) === JSON.stringify(r.candidate);
    const total = Object.values(countMarkers(r.markers, r.cand)).reduce((x, y) => x + y, 0);
    const counted = typeof after.collapsed === "number" ? after.collapsed === total
        : Array.isArray(after.collapsed) ? after.collapsed.length === total : true;
    return [missing.length === 0 && untouched && counted,
        missing.length ? `upstream's dedupe after ours loses ${missing.length} of ${r.distinct.size} distinct directives`
            : !untouched ? "upstream's dedupe changed our output" : `collapsedDirectives says ${after.collapsed}, we collapsed ${total}`];
}

export const checks = {
    "original-keeps-every-copy": {
        when: () => true,
        run(r) {
            const input = countSpans(r.job.tags, contextTexts(r.fixture.context), false);
            const output = countSpans(r.job.tags, r.util.textsOf(r.original), false);
            const lost = [...input].filter(([span, n]) => (output.get(span) ?? 0) < n);
            return [lost.length === 0, `the unpatched module already drops ${lost.length} directive copies (a leftover hand-applied dedupe?)`];
        },
    },
    identical: {
        run: (r) => [JSON.stringify(r.original) === JSON.stringify(r.candidate),
            r.aligned.ok ? `${r.aligned.repls.length} spans were replaced` : r.aligned.detail],
    },
    "only-repeats-replaced": { run: (r) => [r.aligned.ok, r.aligned.detail] },
    "every-directive-survives": {
        run(r) {
            const missing = [...r.distinct].filter((span) => !r.cand.includes(span));
            return [missing.length === 0, `${missing.length} of ${r.distinct.size} distinct directives lost`];
        },
    },
    "one-copy-per-directive": {
        run(r) {
            const counts = countSpans(r.job.tags, r.util.textsOf(r.candidate), true);
            const markerLength = new Map(r.markers.map(([tag, m]) => [tag, m.length]));
            // a span no longer than its marker is never replaced: replacing it would not save
            const worthIt = (span) => span.length > markerLength.get(span.slice(1, span.indexOf(">")));
            const extra = [...counts].filter(([span, n]) => n !== 1 && worthIt(span));
            return [extra.length === 0, `${extra.length} directives appear more than once (e.g. ${extra[0]?.[1]} copies of a ${extra[0]?.[0].length}-byte span)`];
        },
    },
    "markers-well-formed": {
        run(r) {
            const bad = r.markers.filter(([, m]) => Buffer.byteLength(m) > r.job.maxMarkerBytes || r.job.tags.some((t) => m.includes(`<${t}>`)));
            return [bad.length === 0, `marker for ${bad[0]?.[0]} is too long or holds an opening tag`];
        },
    },
    "prefix-stable": { when: (r) => r.wanted.has("prefix-stable") && r.fixture.growing, run: prefixStable },
    "upstream-keeps-directives": { when: (r) => r.pipeline.upstream !== null, run: upstreamKeepsDirectives },
};

export function stats(r) {
    const out = {
        originalBytes: r.util.textBytes(r.original),
        patchedBytes: r.util.textBytes(r.candidate),
        collapsed: countMarkers(r.markers, r.cand),
        distinctDirectives: r.distinct.size,
    };
    if (r.prefixes) {
        out.prefixes = r.prefixes;
    }
    if (r.pipeline.upstream) {
        const before = r.pipeline.upstream.original(r.original);
        const after = r.pipeline.upstream.candidate(r.candidate);
        const upstreamText = before.blocks ? r.util.joined(before.blocks) : "";
        out.upstreamOnly = {
            bytes: before.blocks ? r.util.textBytes(before.blocks) : null,
            surviving: [...r.distinct].filter((span) => upstreamText.includes(span)).length,
        };
        out.pipelineBytes = after.blocks ? r.util.textBytes(after.blocks) : null;
    }
    return out;
}

// ---- senpi's restart binding (sentHashesFromBranch, 2026.8.18-3 and later) -----------------------
// A fixture is a stored branch (session entries). The branch as the extension sends it is built here
// from the extension's own `context` handler, not from the payload, and hashed by senpi's unpatched
// function; the patched function must give exactly that once the extension is loaded, and exactly
// the unpatched hashes before.
function branchAsSent(r) {
    const branch = structuredClone(r.fixture.context.messages);
    const messages = [];
    const where = [];
    branch.forEach((entry, index) => {
        if (entry.type === "message") {
            messages.push(entry.message);
            where.push(index);
        }
        else if (entry.type === "custom_message") {
            messages.push({ role: "custom", customType: entry.customType, content: entry.content, display: entry.display });
            where.push(-1);
        }
    });
    const result = r.handler({ type: "context", messages }, {});
    const sent = result && Array.isArray(result.messages) ? result.messages : messages;
    sent.forEach((message, k) => {
        if (where[k] >= 0) {
            branch[where[k]] = { ...branch[where[k]], message };
        }
    });
    return branch;
}

const sameHashes = (a, b) => JSON.stringify(a) === JSON.stringify(b);

export const bindingChecks = {
    "binding-unchanged-without-extension": {
        run: (r) => [sameHashes(r.alone, r.original(structuredClone(r.fixture.context.messages))),
            "without the extension loaded, the patched binding hashes differ from senpi's own"],
    },
    "binding-hashes-as-sent": {
        run: (r) => [sameHashes(r.withExtension, r.original(branchAsSent(r))),
            "with the extension loaded, the binding does not hash the branch as the extension sends it"],
    },
    "binding-follows-the-rewrite": {
        run(r) {
            const asSent = branchAsSent(r);
            const rewritten = JSON.stringify(asSent) !== JSON.stringify(r.fixture.context.messages);
            if (r.fixture.checks.includes("rewrites") && !rewritten) {
                return [false, "the extension rewrote nothing in a fixture made to be rewritten"];
            }
            const stored = r.original(structuredClone(r.fixture.context.messages));
            return [!rewritten || !sameHashes(r.withExtension, stored) || stored.length === 0,
                "the extension rewrote the branch but the binding still hashes it as stored"];
        },
    },
    "binding-input-not-mutated": { run: (r) => [!r.mutated, "the patched binding changed the branch it was given"] },
};

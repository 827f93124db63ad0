// The plain scans the directive-dedupe checks are built on: tagged spans, markers, and the alignment
// of a patched text with its original. Written apart from the payload's code, on purpose.

// Outermost <tag>…</tag> spans of one text (the extension's checks use it too).
export function spansOf(tags, text, outermostOnly) {
    const spans = [];
    for (const tag of tags) {
        // what /<tag>[\s\S]*?<\/tag>/g matches, found with indexOf (a lazy regex over 25 kB spans
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

export function countSpans(tags, texts, outermostOnly) {
    const counts = new Map();
    for (const text of texts) {
        for (const s of spansOf(tags, text, outermostOnly)) {
            counts.set(s.text, (counts.get(s.text) ?? 0) + 1);
        }
    }
    return counts;
}

export function contextTexts(context) {
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

// The markers a patched text may hold: one per configured tag; with tags = "auto" (job.autoMinBytes),
// one per name that opens a tag anywhere in `texts` too.
export function markersOf(job, texts = []) {
    const names = new Set(job.tags);
    if (job.autoMinBytes > 0) {
        for (const text of texts) {
            for (const m of text.matchAll(/<([A-Za-z][A-Za-z0-9_.:-]{0,39})[\s>]/g)) {
                names.add(m[1]);
            }
        }
    }
    return [...names].map((tag) => [tag, job.marker.split("{tag}").join(tag)]);
}

// Whether an open tag of `tag` starts at `at`: `<tag>`, or `<tag` and whitespace (attributes).
const opensAt = (text, at, tag) => text.startsWith(`<${tag}>`, at)
    || (text.startsWith(`<${tag}`, at) && /\s/.test(text.charAt(at + tag.length + 1)));

export function countMarkers(markers, text) {
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
export function align(markers, orig, cand) {
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
        const hit = markers.find(([tag, marker]) => cand.startsWith(marker, j) && opensAt(orig, i, tag));
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

export function mapPosition(repls, p) {
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

export function commonPrefix(a, b) {
    const n = Math.min(a.length, b.length);
    let i = 0;
    while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) {
        i++;
    }
    return i;
}

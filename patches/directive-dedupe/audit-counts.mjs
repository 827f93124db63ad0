// directive-dedupe's counts for `audit` (named by `audit_counts` in patch.toml; audit.mjs imports it
// with the audit's job): the tagged directive spans a text holds, and the markers it left per tag.

// Every <tag>…</tag> span of one text, for the job's tags (as the payload finds them).
export function spansOf(text, job) {
    const found = [];
    for (const tag of job.tags) {
        const open = `<${tag}>`;
        const close = `</${tag}>`;
        for (let at = text.indexOf(open); at !== -1; at = text.indexOf(open, at + 1)) {
            const end = text.indexOf(close, at);
            if (end === -1) {
                break;
            }
            found.push(text.slice(at, end + close.length));
            at = end + close.length - 1;
        }
    }
    return found;
}

// Markers per tag, found by the text every marker shares (one scan per block, not one per tag).
export function countMarkers(texts, job) {
    const MARKER_TAIL = job.marker.slice(job.marker.indexOf("{tag}") + "{tag}".length);
    const MARKER_HEAD = job.marker.slice(0, job.marker.indexOf("{tag}"));
    const counts = {};
    for (const text of texts) {
        for (let at = text.indexOf(MARKER_TAIL); at !== -1; at = text.indexOf(MARKER_TAIL, at + 1)) {
            const start = text.lastIndexOf(MARKER_HEAD, at);
            const tag = start === -1 ? "" : text.slice(start + MARKER_HEAD.length, at);
            if (job.tags.includes(tag) || (job.autoMinBytes > 0 && /^[A-Za-z][A-Za-z0-9_.:-]{0,39}$/.test(tag))) {
                counts[tag] = (counts[tag] ?? 0) + 1;
            }
        }
    }
    return counts;
}

function __senpiGuardConfig() {
    return /*senpi-guard:config*/{"tags":[],"marker":""}/*senpi-guard:config-end*/;
}
var __senpiGuardMarkers; // (filled on first use: this file may sit below the module's own code)
function __senpiGuardMarker(tag) {
    __senpiGuardMarkers ??= new Map();
    let marker = __senpiGuardMarkers.get(tag);
    if (marker === undefined) {
        marker = __senpiGuardConfig().marker.split("{tag}").join(tag);
        __senpiGuardMarkers.set(tag, marker);
    }
    return marker;
}
var __senpiGuardTagList;
// The configured tags; with tags = "auto", the known ones (kept at any size).
function __senpiGuardTags() {
    if (__senpiGuardTagList === undefined) {
        const config = __senpiGuardConfig();
        __senpiGuardTagList = Array.isArray(config.tags) ? config.tags : config.known;
    }
    return __senpiGuardTagList;
}
// With tags = "auto": the least UTF-8 bytes of a span of any other name that is collapsed (else 0).
var __senpiGuardAutoMin;
function __senpiGuardAuto() {
    return __senpiGuardAutoMin ??= __senpiGuardConfig().tags === "auto" ? __senpiGuardConfig().min_bytes : 0;
}
// With tags = "auto": the tags whose repeats are events (never collapsed; `events` in patch.toml).
var __senpiGuardEventSet;
function __senpiGuardEvents() {
    return __senpiGuardEventSet ??= new Set(__senpiGuardConfig().events ?? []);
}
var __senpiGuardTagCache;
function __senpiGuardTagSet(tags) {
    if (__senpiGuardTagCache === undefined) {
        __senpiGuardTagCache = { names: new Set(tags), longest: Math.max(...tags.map((t) => t.length)),
            starts: new Set(tags.map((t) => t.charCodeAt(0))) };
    }
    return __senpiGuardTagCache;
}
// With a tag list: where the configured tag that starts at `nameStart` ends ("<tag>" or "</tag>"):
// the index of its ">", with the name's end in __senpiGuardNameEnd; -1 when it is none of them.
function __senpiGuardListToken(text, nameStart, set) {
    if (!set.starts.has(text.charCodeAt(nameStart))) {
        return -1; // (code is full of "<" that start no configured tag: `a < b`, `List<T>`)
    }
    const limit = Math.min(text.length, nameStart + set.longest + 1);
    let gt = nameStart;
    while (gt < limit && text.charCodeAt(gt) !== 62) {
        gt++;
    }
    if (gt === limit || gt === nameStart || !set.names.has(text.slice(nameStart, gt))) {
        return -1;
    }
    __senpiGuardNameEnd = gt;
    return gt;
}
// With tags = "auto": where the tag that starts at `nameStart` ends ("<name>", "<name attrs>" or
// "</name>"; a name is a letter, then at most 39 of letters, digits, "_.:-"; attributes hold no "<"
// or ">", at most 1,000 characters, and do not end in "/" as a self-closing tag does): the index
// of its ">", with the name's end in __senpiGuardNameEnd; -1 when it is no tag.
var __senpiGuardNameEnd = 0;
function __senpiGuardAutoToken(text, nameStart, closing) {
    const limit = Math.min(text.length, nameStart + 40);
    let at = nameStart;
    for (; at < limit; at++) {
        const c = text.charCodeAt(at);
        const letter = (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
        if (!(letter || (at > nameStart && ((c >= 48 && c <= 58) || c === 45 || c === 46 || c === 95)))) {
            break;
        }
    }
    if (at === nameStart || at === text.length) {
        return -1;
    }
    __senpiGuardNameEnd = at;
    const next = text.charCodeAt(at);
    if (next === 62) {
        return at;
    }
    if (closing || !(next === 32 || next === 9 || next === 10 || next === 13)) {
        return -1;
    }
    const end = Math.min(text.length, at + 1001);
    for (let k = at + 1; k < end; k++) {
        const c = text.charCodeAt(k);
        if (c === 62) {
            return text.charCodeAt(k - 1) === 47 ? -1 : k;
        }
        if (c === 60) {
            return -1;
        }
    }
    return -1;
}
// Whether text[start, end) has at least `min` UTF-8 bytes. Where the UTF-16 length cannot tell,
// the text's non-ASCII units are indexed once (`extra` holds, per text, their positions and the
// extra bytes up to each), so that every span is then counted in logarithmic time.
function __senpiGuardAtLeast(text, start, end, min, extra) {
    if (end - start >= min) {
        return true; // (UTF-8 has at least one byte per UTF-16 unit)
    }
    if ((end - start) * 3 < min) {
        return false;
    }
    extra.index ??= __senpiGuardExtraIndex(text);
    const { at, sum } = extra.index;
    const before = (p) => { // extra bytes of the units before position p
        let lo = 0;
        let hi = at.length;
        while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (at[mid] < p) {
                lo = mid + 1;
            }
            else {
                hi = mid;
            }
        }
        return lo === 0 ? 0 : sum[lo - 1];
    };
    return end - start + before(end) - before(start) >= min;
}
// Positions of the non-ASCII UTF-16 units of a text and the running total of their extra UTF-8
// bytes (a BMP unit 1 or 2 more; a surrogate pair 2 more in all, a lone surrogate 2 more).
function __senpiGuardExtraIndex(text) {
    let count = 0;
    for (let k = 0; k < text.length; k++) {
        count += text.charCodeAt(k) >= 0x80 ? 1 : 0;
    }
    const at = new Int32Array(count);
    const sum = new Float64Array(count);
    let n = 0;
    let total = 0;
    for (let k = 0; k < text.length; k++) {
        const c = text.charCodeAt(k);
        if (c < 0x80) {
            continue;
        }
        const paired = (c & 0xfc00) === 0xd800 && (text.charCodeAt(k + 1) & 0xfc00) === 0xdc00;
        const low = (c & 0xfc00) === 0xdc00 && k > 0 && (text.charCodeAt(k - 1) & 0xfc00) === 0xd800;
        total += c < 0x800 ? 1 : paired || low ? 1 : 2;
        at[n] = k;
        sum[n++] = total;
    }
    return { at, sum };
}
// Well-formed spans of one text block, in order. A tag whose spans are unclosed, nested or stray
// in this block is left alone here (fail closed); a span inside another tag's span is not ours.
// Tokens are found by jumping from "<" to "<" and reading at most the longest tag name: linear.
// Where the text repeats a tag's first span, and that span holds no other configured token (it is
// `clean`), the copy is recognised by one comparison and skipped over: its tokens are known.
function __senpiGuardSpans(text, tags, firsts) {
    let at = text.indexOf("<");
    if (at === -1) {
        return [];
    }
    const set = __senpiGuardTagSet(tags);
    const names = set.names;
    const auto = __senpiGuardAuto();
    let open = null; // tag -> [start, tokens counted when it opened] (made when first needed)
    let broken = null;
    let tokens = 0; // configured tokens met so far: a span met none but its own ones is clean
    let found = null; // (made when the first span is found)
    for (; at !== -1; at = text.indexOf("<", at + 1)) {
        const closing = text.charCodeAt(at + 1) === 47;
        const nameStart = closing ? at + 2 : at + 1;
        const gt = auto > 0 ? __senpiGuardAutoToken(text, nameStart, closing)
            : __senpiGuardListToken(text, nameStart, set);
        if (gt === -1) {
            continue;
        }
        const tag = text.slice(nameStart, __senpiGuardNameEnd);
        tokens++;
        if (broken !== null && broken.has(tag)) {
            continue;
        }
        if (!closing) {
            const first = open === null || open.size === 0 ? firsts.get(tag) : undefined;
            // (slice and === compare at memcmp speed; startsWith with a position does not)
            if (first !== undefined && first.clean && text.slice(at, at + first.text.length) === first.text) {
                found ??= [];
                found.push({ tag, start: at, end: at + first.text.length, first: true, clean: true });
                at += first.text.length - 1;
                tokens += 1;
            }
            else if (open !== null && open.has(tag)) {
                (broken ??= new Set()).add(tag);
            }
            else {
                (open ??= new Map()).set(tag, [at, tokens]);
            }
        }
        else if (open !== null && open.has(tag)) {
            const [start, counted] = open.get(tag);
            found ??= [];
            found.push({ tag, start, end: gt + 1, first: false, clean: tokens === counted + 1 });
            open.delete(tag);
        }
        else {
            (broken ??= new Set()).add(tag);
        }
    }
    if (open !== null) {
        for (const tag of open.keys()) {
            (broken ??= new Set()).add(tag);
        }
    }
    return found === null ? [] : __senpiGuardCandidates(text, found, broken, names, auto);
}
// The spans that are candidates (their tag not broken in this text; with "auto", never an event
// tag, and a span of an unknown name only from `auto` bytes on), outermost first.
function __senpiGuardCandidates(text, found, broken, names, auto) {
    const extra = {}; // (the text's byte index, made when a span first needs it)
    if (broken !== null || auto > 0) {
        const events = auto > 0 ? __senpiGuardEvents() : null;
        found = found.filter((span) => (broken === null || !broken.has(span.tag))
            && (auto === 0 || (!events.has(span.tag)
                && (names.has(span.tag) || __senpiGuardAtLeast(text, span.start, span.end, auto, extra)))));
    }
    return found.length < 2 ? found : __senpiGuardOutermost(found);
}
// Spans inside another tag's span are not ours; two spans that cross each other leave the block alone.
function __senpiGuardOutermost(found) {
    found.sort((a, b) => a.start - b.start);
    const outer = [];
    let reach = -1;
    for (const span of found) {
        if (span.start >= reach) {
            outer.push(span);
            reach = span.end;
        }
        else if (span.end > reach) {
            return [];
        }
    }
    return outer;
}
// V8 hashes a string longer than 16,383 characters by its length alone, so a Set of long spans
// compares every same-length span in full: quadratic when a plugin stamps a counter into each copy.
// Spans are filed under a short key (length and three slices) and compared exactly within it.
function __senpiGuardKey(body) {
    const n = body.length;
    if (n <= 512) {
        return body;
    }
    const mid = n >> 1;
    return `${n}:${body.slice(0, 128)}${body.slice(mid - 64, mid + 64)}${body.slice(n - 128)}`;
}
// FNV-1a over the UTF-16 units: the whole text, for buckets the short key cannot split.
function __senpiGuardHash(text) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) {
        hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    }
    return hash >>> 0;
}
// True when `body` was seen before under this tag; else files it and returns false. A key holds
// one text, then a short list, then (past 8 texts that share length and slices) a map by full hash.
function __senpiGuardSeen(seen, body) {
    const key = __senpiGuardKey(body);
    let filed = seen.get(key);
    if (filed === undefined) {
        seen.set(key, body);
        return false;
    }
    if (typeof filed === "string") {
        if (filed === body) {
            return true;
        }
        seen.set(key, [filed, body]);
        return false;
    }
    if (Array.isArray(filed)) {
        if (filed.includes(body)) {
            return true;
        }
        if (filed.length < 8) {
            filed.push(body);
            return false;
        }
        const byHash = new Map();
        for (const text of filed) {
            const hash = __senpiGuardHash(text);
            byHash.set(hash, [...(byHash.get(hash) ?? []), text]);
        }
        seen.set(key, byHash);
        filed = byHash;
    }
    const hash = __senpiGuardHash(body);
    const same = filed.get(hash);
    if (same === undefined) {
        filed.set(hash, [body]);
        return false;
    }
    if (same.includes(body)) {
        return true;
    }
    same.push(body);
    return false;
}
function __senpiGuardDedupeText(text, tags, kept, firsts, collapsed) {
    const spans = __senpiGuardSpans(text, tags, firsts);
    if (spans.length === 0) {
        return text;
    }
    let out = "";
    let last = 0;
    for (const span of spans) {
        const body = text.slice(span.start, span.end);
        let seen = kept.get(span.tag);
        if (seen === undefined) {
            seen = new Map();
            kept.set(span.tag, seen);
            firsts.set(span.tag, { text: body, clean: span.clean });
        }
        if (span.first || __senpiGuardSeen(seen, body)) {
            const marker = __senpiGuardMarker(span.tag);
            // only where it saves something: a short repeated span stays as it is
            if (marker.length < body.length) {
                out += text.slice(last, span.start) + marker;
                last = span.end;
                collapsed.push(span.tag);
            }
        }
    }
    return last === 0 ? text : out + text.slice(last);
}
function __senpiGuardDedupe(blocks) {
    if (!Array.isArray(blocks)) {
        return blocks;
    }
    const tags = __senpiGuardTags();
    const kept = new Map();
    const firsts = new Map();
    const collapsed = [];
    let out = null;
    for (let index = 0; index < blocks.length; index++) {
        const block = blocks[index];
        if (block === null || typeof block !== "object" || block.type !== "text" || typeof block.text !== "string") {
            continue;
        }
        if (block.text.indexOf("<") === -1) {
            continue; // no tag at all (most blocks: labels, answers)
        }
        const text = __senpiGuardDedupeText(block.text, tags, kept, firsts, collapsed);
        if (text !== block.text) {
            if (out === null) {
                out = blocks.slice();
            }
            out[index] = { ...block, text };
        }
    }
    const result = out === null ? blocks : out;
    if (__senpiGuardUpstreamSeen()) { // (only a process whose upstream dedupe ran needs the record)
        const texts = new Array(result.length);
        for (let index = 0; index < result.length; index++) {
            texts[index] = result[index] && result[index].text;
        }
        __senpiGuardOutputs().set(result, { texts, collapsed });
    }
    return result;
}

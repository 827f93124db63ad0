import { commonPrefix } from "./spans.mjs";

// A sample session of the fixture's shape, as 2026.8.4-2+ sends it when every call is a full
// re-send (resume off, side calls, each flatten): one call per user message, the context up to
// it. Per configuration: the text bytes sent and the bytes a prompt cache has to write anew (past
// the prefix the previous call sent). Upstream's keep-last rewrites every earlier copy when a new
// one arrives, so its prefix breaks; the patch keeps the first copy, so its prefix holds.
export function resendSession(r) {
    const messages = r.fixture.context.messages;
    const totals = { installed: { bytes: 0, cacheWrite: 0 }, patched: { bytes: 0, cacheWrite: 0 } };
    const previous = { installed: "", patched: "" };
    let calls = 0;
    for (let k = 1; k <= messages.length; k++) {
        if (messages[k - 1].role !== "user") {
            continue;
        }
        const part = r.pipeline.run({ ...r.fixture.context, messages: messages.slice(0, k) });
        const sent = {
            installed: r.pipeline.upstream.original(part.original).blocks,
            patched: r.pipeline.upstream.candidate(part.candidate).blocks,
        };
        if (!sent.installed || !sent.patched) {
            return null;
        }
        for (const config of ["installed", "patched"]) {
            const text = r.util.textsOf(sent[config]).join("");
            const kept = commonPrefix(previous[config], text);
            totals[config].bytes += Buffer.byteLength(text, "utf8");
            totals[config].cacheWrite += Buffer.byteLength(text.slice(kept), "utf8");
            previous[config] = text;
        }
        calls++;
    }
    return calls ? { calls, ...totals } : null;
}

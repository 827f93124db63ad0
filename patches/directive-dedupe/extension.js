// The extension layer: a senpi extension on the `context` event, fired before every model call of
// every provider (both lanes of claude-sdk-oauth included). senpi-guard renders this file after the
// payload's functions (same tags, same marker) and installs it in <agent dir>/extensions/.
//
// In message order, for user messages, custom messages (they become user messages) and tool-result
// text, the first span of each distinct content of each configured tag is kept; a later
// byte-identical span becomes the marker. An assistant message carrying a Claude Code compact
// boundary starts a new epoch: the resident session no longer holds the earlier copies, so the
// first copy after the latest boundary is kept in full. Each message's output depends only on it
// and the messages before it, so what was already sent never changes (continuity hashes, prompt
// caches). Untouched messages and parts are returned as the very same objects; the input is never
// changed; on any error nothing is returned and senpi sends the messages as they were.
const __senpiGuardRoles = new Set(["user", "custom", "toolResult"]);

function __senpiGuardIsBoundary(message) {
    return message !== null && typeof message === "object" && message.role === "assistant"
        && Array.isArray(message.diagnostics)
        && message.diagnostics.some((d) => d !== null && typeof d === "object" && d.type === "claude_sdk_oauth_compact_boundary");
}

function __senpiGuardMessage(message, state) {
    if (message === null || typeof message !== "object" || !__senpiGuardRoles.has(message.role)) {
        return message;
    }
    const tags = __senpiGuardTags();
    const dedupe = (text) => (text.indexOf("<") === -1 ? text
        : __senpiGuardDedupeText(text, tags, state.kept, state.firsts, state.collapsed));
    if (typeof message.content === "string") {
        const text = dedupe(message.content);
        return text === message.content ? message : { ...message, content: text };
    }
    if (!Array.isArray(message.content)) {
        return message;
    }
    let parts = null;
    message.content.forEach((part, index) => {
        if (part !== null && typeof part === "object" && part.type === "text" && typeof part.text === "string") {
            const text = dedupe(part.text);
            if (text !== part.text) {
                parts ??= message.content.slice();
                parts[index] = { ...part, text };
            }
        }
    });
    return parts === null ? message : { ...message, content: parts };
}

// The messages with later copies replaced, or null when nothing changed.
export function __senpiGuardDedupeMessages(messages) {
    if (!Array.isArray(messages)) {
        return null;
    }
    let state = { kept: new Map(), firsts: new Map(), collapsed: [] };
    let out = null;
    messages.forEach((message, index) => {
        const result = __senpiGuardMessage(message, state);
        if (result !== message) {
            out ??= messages.slice();
            out[index] = result;
        }
        if (__senpiGuardIsBoundary(message)) {
            state = { kept: new Map(), firsts: new Map(), collapsed: [] };
        }
    });
    return out;
}

export default function senpiGuardDirectiveDedupe(pi) {
    pi.on("context", (event) => {
        try {
            const messages = __senpiGuardDedupeMessages(event && event.messages);
            return messages === null ? undefined : { messages };
        }
        catch {
            return undefined; // fail closed: senpi sends the messages unchanged
        }
    });
}

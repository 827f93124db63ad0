import { describeToolCall, partsOf, toolResultLabel } from "./tools.js";
const CONTINUE_INSTRUCTION = "The conversation so far is above. Continue it: answer the latest user message below, using the tools you are given.";
function roleLabel(message, customNames) {
    if (message.role === "user") {
        return "USER:\n";
    }
    if (message.role === "assistant") {
        return "ASSISTANT:\n";
    }
    return toolResultLabel(message, customNames);
}
function pushMessage(blocks, message, lead, customNames) {
    blocks.push({ type: "text", text: `${lead}${roleLabel(message, customNames)}` });
    for (const part of partsOf(message.content)) {
        if (part.type === "text") {
            blocks.push({ type: "text", text: part.text });
        }
        else if (part.type === "toolCall") {
            blocks.push({ type: "text", text: describeToolCall(part, customNames) });
        }
        else if (part.type === "image") {
            blocks.push({ type: "image", source: { type: "base64", media_type: part.mimeType, data: part.data } });
        }
    }
}
function orphanToolResults(messages) {
    const calls = new Set();
    const orphans = [];
    for (const message of messages) {
        if (message.role === "assistant") {
            for (const part of partsOf(message.content)) {
                if (part.type === "toolCall") {
                    calls.add(part.id);
                }
            }
        }
        else if (message.role === "toolResult" && !calls.has(message.toolCallId)) {
            orphans.push(message);
        }
    }
    return orphans;
}
export function buildPromptBlocks(context, customNames) {
    const messages = context.messages;
    const last = messages[messages.length - 1];
    const finalUser = last !== undefined && last.role === "user" ? last : undefined;
    const history = finalUser === undefined ? messages : messages.slice(0, -1);
    const blocks = [];
    if (history.length > 0) {
        blocks.push({ type: "text", text: "<conversation_history>\n" });
        history.forEach((message, index) => pushMessage(blocks, message, index === 0 ? "" : "\n\n", customNames));
        blocks.push({ type: "text", text: "\n</conversation_history>" });
    }
    const orphans = orphanToolResults(history);
    if (orphans.length > 0) {
        const ids = orphans.map((message) => message.toolCallId).join(", ");
        blocks.push({ type: "text", text: `<recovered_tool_results>\n${ids}\n</recovered_tool_results>` });
    }
    blocks.push({ type: "text", text: CONTINUE_INSTRUCTION });
    if (finalUser !== undefined) {
        pushMessage(blocks, finalUser, "", customNames);
    }
    return blocks;
}
//# sourceMappingURL=prompt-bridge.js.map

import { describeToolCall, partsOf, toolResultLabel } from "./tools.js";
function pushParts(blocks, content) {
    for (const part of partsOf(content)) {
        if (part.type === "text") {
            blocks.push({ type: "text", text: part.text });
        }
        else if (part.type === "image") {
            blocks.push({ type: "image", source: { type: "base64", media_type: part.mimeType, data: part.data } });
        }
    }
}
function assistantText(message, customNames) {
    const lines = [];
    for (const part of partsOf(message.content)) {
        if (part.type === "text") {
            lines.push(part.text);
        }
        else if (part.type === "toolCall") {
            lines.push(describeToolCall(part, customNames));
        }
    }
    return lines.join("\n");
}
export function buildPromptBlocks(context, customNames) {
    const blocks = [];
    for (const message of context.messages) {
        const lead = blocks.length === 0 ? "" : "\n\n";
        if (message.role === "user") {
            blocks.push({ type: "text", text: `${lead}USER:\n` });
            pushParts(blocks, message.content);
        }
        else if (message.role === "assistant") {
            blocks.push({ type: "text", text: `${lead}ASSISTANT:\n${assistantText(message, customNames)}` });
        }
        else if (message.role === "toolResult") {
            blocks.push({ type: "text", text: `${lead}${toolResultLabel(message, customNames)}` });
            pushParts(blocks, message.content);
        }
    }
    return blocks.length > 0 ? blocks : [{ type: "text", text: "" }];
}
//# sourceMappingURL=prompt-bridge.js.map

import { partsOf, toSdkToolName } from "./tools.js";
// The resident session's delta lane: only the new sent messages, no dedupe of any kind.
export function buildDeltaPromptBlocks(messages, customNames) {
    const blocks = [];
    messages.forEach((message, index) => {
        if (index > 0) {
            blocks.push({ type: "text", text: "\n\n" });
        }
        if (message.role === "toolResult") {
            blocks.push({ type: "text", text: `Tool result (${toSdkToolName(message.toolName, customNames)}, id=${message.toolCallId}):\n` });
        }
        for (const part of partsOf(message.content)) {
            if (part.type === "text") {
                blocks.push({ type: "text", text: part.text });
            }
            else if (part.type === "image") {
                blocks.push({ type: "image", source: { type: "base64", media_type: part.mimeType, data: part.data } });
            }
        }
    });
    return blocks;
}
//# sourceMappingURL=session-sync.js.map

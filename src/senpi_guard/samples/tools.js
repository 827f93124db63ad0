export function describeToolCall(call) {
    const args = call.arguments === undefined ? "{}" : JSON.stringify(call.arguments);
    return `[called ${call.name} id=${call.id}] ${args}`;
}
export function toolResultLabel(message) {
    return `TOOL RESULT (historical ${message.toolName}, id=${message.toolCallId}):\n`;
}
export function partsOf(content) {
    if (typeof content === "string") {
        return [{ type: "text", text: content }];
    }
    return Array.isArray(content) ? content : [];
}

// The stream a test provider answers with: one assistant message saying "ok", streamed the way
// senpi's providers stream (start, text start/delta/end, done). `createStream` is pi-ai's
// createAssistantMessageEventStream, passed in by the provider that imports it.
export function replyStream(createStream, message) {
    const stream = createStream();
    queueMicrotask(() => {
        stream.push({ type: "start", partial: { ...message, content: [] } });
        stream.push({ type: "text_start", contentIndex: 0, partial: { ...message, content: [{ type: "text", text: "" }] } });
        stream.push({ type: "text_delta", contentIndex: 0, delta: "ok", partial: message });
        stream.push({ type: "text_end", contentIndex: 0, content: "ok", partial: message });
        stream.push({ type: "done", reason: "stop", message });
        stream.end(message);
    });
    return stream;
}

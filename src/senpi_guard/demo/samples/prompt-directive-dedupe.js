const ULTRAWORK_SPAN = /<ultrawork-mode>[\s\S]*?<\/ultrawork-mode>/g;
const SUPERSEDED = "[ultrawork-mode directive superseded by a later copy]";
function isNested(text) {
    let depth = 0;
    const tokens = text.match(/<\/?ultrawork-mode>/g) ?? [];
    for (const token of tokens) {
        depth += token.startsWith("</") ? -1 : 1;
        if (depth > 1 || depth < 0) {
            return true;
        }
    }
    return false;
}
export function dedupeUltraworkBlocks(blocks) {
    const spans = [];
    for (let index = 0; index < blocks.length; index++) {
        const block = blocks[index];
        if (block.type !== "text") {
            continue;
        }
        if (isNested(block.text)) {
            return { blocks, collapsedDirectives: 0 };
        }
        for (const match of block.text.matchAll(ULTRAWORK_SPAN)) {
            spans.push({ index, start: match.index, end: match.index + match[0].length });
        }
    }
    if (spans.length < 2) {
        return { blocks, collapsedDirectives: 0 };
    }
    const out = blocks.slice();
    const earlier = spans.slice(0, -1).reverse();
    for (const span of earlier) {
        const text = out[span.index].text;
        out[span.index] = { ...out[span.index], text: text.slice(0, span.start) + SUPERSEDED + text.slice(span.end) };
    }
    return { blocks: out, collapsedDirectives: earlier.length };
}
//# sourceMappingURL=prompt-directive-dedupe.js.map

// Session entries -> the agent messages of one leaf's context.
function indexOf(entries, byId) {
    if (byId) {
        return byId;
    }
    const index = new Map();
    for (const entry of entries) {
        index.set(entry.id, entry);
    }
    return index;
}
function pathTo(entries, leafId, byId) {
    if (leafId === null) {
        return [];
    }
    const index = indexOf(entries, byId);
    let current = (leafId ? index.get(leafId) : undefined) ?? entries[entries.length - 1];
    const path = [];
    while (current) {
        path.unshift(current);
        current = current.parentId ? index.get(current.parentId) : undefined;
    }
    return path;
}
function contextEntries(entries, leafId, byId) {
    const path = pathTo(entries, leafId, byId);
    const at = path.findLastIndex((entry) => entry.type === "compaction");
    if (at < 0) {
        return path;
    }
    const compaction = path[at];
    const kept = [compaction];
    let keeping = false;
    for (const entry of path.slice(0, at)) {
        if (entry.type === "compaction") {
            continue; // an older summary is superseded, and never counts as the first kept entry
        }
        keeping ||= entry.id === compaction.firstKeptEntryId;
        if (keeping) {
            kept.push(entry);
        }
    }
    return kept.concat(path.slice(at + 1));
}
function toMessages(entry) {
    switch (entry.type) {
        case "message":
            return [entry.message.content == null && ["user", "assistant", "toolResult"].includes(entry.message.role) ? { ...entry.message, content: [] } : entry.message];
        case "custom_message":
            return [{ role: "custom", customType: entry.customType, content: entry.content ?? [], display: entry.display, timestamp: Date.parse(entry.timestamp) }];
        case "branch_summary":
            return entry.summary ? [{ role: "branchSummary", summary: entry.summary, fromId: entry.fromId, timestamp: Date.parse(entry.timestamp) }] : [];
        case "compaction":
            return [{ role: "compactionSummary", summary: entry.summary, tokensBefore: entry.tokensBefore, timestamp: Date.parse(entry.timestamp) }];
        default:
            return [];
    }
}
export function buildSessionContext(entries, leafId, byId) {
    return { messages: contextEntries(entries, leafId, byId).flatMap(toMessages) };
}
//# sourceMappingURL=session-manager.js.map

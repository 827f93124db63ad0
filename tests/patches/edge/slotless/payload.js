function __testSlotless(blocks) {
    return blocks;
}

function __testPlain(blocks) {
    return blocks;
}

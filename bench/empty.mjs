// Warms up the ES module loader in cold-start children (see core.bench.mjs) so that its own start-up is not counted.
export {};

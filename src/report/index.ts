/**
 * Reports over the audit log: the self-contained HTML report and the MCEC
 * failure summary of a session. Used by `tool-envelope audit report` and
 * `tool-envelope audit failure-summary`.
 */
export * from './data.js';
export * from './record-kind.js';
export * from './stats-counts.js';
export * from './html.js';
export * from './svg.js';
export * from './failure-summary.js';

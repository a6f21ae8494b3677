/** The approval-vote table on PostgreSQL (migration 8). */
import type pg from 'pg';
import { APPROVAL_VOTE_COLUMNS, type ApprovalVoteTable, approvalVoteFromRow, approvalVoteValues } from '../approval-votes.js';

/** Runs one statement with the store's checks and typed failures (the store's `q`). */
type Query = (what: string, text: string, values?: unknown[]) => Promise<pg.QueryResult>;

// Only while the request is pending; a second vote of one approver is ignored (the unique key).
const INSERT_SQL = `INSERT INTO approval_votes (${APPROVAL_VOTE_COLUMNS.join(', ')}) SELECT $1, $2, $3, $4, $5
WHERE EXISTS (SELECT 1 FROM approvals WHERE id = $1 AND state = 'pending') ON CONFLICT DO NOTHING`;
const LIST_SQL = 'SELECT * FROM approval_votes WHERE approval_id = $1 ORDER BY seq';

/** The table over the store's pool. */
export function postgresApprovalVotes(q: Query): ApprovalVoteTable {
  return {
    async add(vote) {
      const r = await q('approval vote add', INSERT_SQL, approvalVoteValues(vote));
      // Read after this vote's own commit: of concurrent voters, the last to commit sees them all.
      const rows = await q('approval vote list', LIST_SQL, [vote.approvalId]);
      return { added: (r.rowCount ?? 0) > 0, approvers: rows.rows.map((x) => String((x as Record<string, unknown>).approver)) };
    },
    async list(approvalId) {
      const rows = await q('approval vote list', LIST_SQL, [approvalId]);
      return rows.rows.map((x) => approvalVoteFromRow(x as Record<string, unknown>));
    },
  };
}

/** The approval-vote table on SQLite (migration 8), on the store's own connection. */
import type Database from 'better-sqlite3';
import { APPROVAL_VOTE_COLUMNS, type ApprovalVoteTable, approvalVoteFromRow, approvalVoteValues } from '../approval-votes.js';
import { tableGuard } from '../guards.js';

/** The table over one open connection; `check` throws when the store is closed. */
export function sqliteApprovalVotes(db: Database.Database, check: () => void): ApprovalVoteTable {
  let stmts: { insert: Database.Statement; list: Database.Statement } | undefined;
  const prepared = () =>
    (stmts ??= {
      // Only while the request is pending; a second vote of one approver is ignored (the unique key).
      insert: db.prepare(
        `INSERT INTO approval_votes (${APPROVAL_VOTE_COLUMNS.join(', ')}) SELECT ?, ?, ?, ?, ?
         WHERE EXISTS (SELECT 1 FROM approvals WHERE id = ? AND state = 'pending') ON CONFLICT DO NOTHING`,
      ),
      list: db.prepare('SELECT * FROM approval_votes WHERE approval_id = ? ORDER BY seq'),
    });
  const guard = tableGuard(check, 'sqlite approval vote');
  return {
    async add(vote) {
      const values = approvalVoteValues(vote);
      return guard('add', () => {
        const s = prepared();
        const added = s.insert.run(...values, vote.approvalId).changes > 0;
        const approvers = (s.list.all(vote.approvalId) as Record<string, unknown>[]).map((r) => String(r.approver));
        return { added, approvers };
      });
    },
    async list(approvalId) {
      return guard('list', () => (prepared().list.all(approvalId) as Record<string, unknown>[]).map(approvalVoteFromRow));
    },
  };
}

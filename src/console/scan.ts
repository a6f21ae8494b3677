/**
 * One page of what an identity may see, read from the store's keyset pages: the store pages are
 * read in order, what the identity may not see is dropped, and the page ends at the store page that
 * filled it, so the next cursor is the store's own. A tenant's page may hold fewer rows than asked.
 */

/** Reads store pages from `cursor` until `limit` visible rows or `maxPages` store pages. */
export async function scanVisible<T>(
  read: (cursor: string | null) => Promise<{ rows: T[]; nextCursor: string | null }>,
  visible: (row: T) => boolean,
  cursor: string | null,
  limit: number,
  maxPages = 20,
): Promise<{ rows: T[]; nextCursor: string | null }> {
  const rows: T[] = [];
  let next = cursor;
  for (let i = 0; i < maxPages; i++) {
    const page = await read(next);
    for (const r of page.rows) if (visible(r)) rows.push(r);
    next = page.nextCursor;
    if (next === null || rows.length >= limit) break;
  }
  return { rows, nextCursor: next };
}

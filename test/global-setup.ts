// Vitest global setup. The store work adds a throwaway PostgreSQL server here.
export default async function setup(): Promise<void> {}

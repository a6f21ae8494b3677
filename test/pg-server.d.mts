/** Types of test/pg-server.mjs. */
export declare function findPgBin(): string | undefined;
export declare function startThrowawayPg(options: {
  bin: string;
  database?: string;
  durable?: boolean;
}): Promise<{ url: string; dir: string; stop: () => void }>;
export declare function benchPostgres(): Promise<{ url: string; server?: { url: string; dir: string; stop: () => void } } | undefined>;

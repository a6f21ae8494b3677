/** Types of scripts/test-prereqs.mjs. */
export interface Prereq {
  tool: string;
  debian: string;
  env: string;
  paths?: string[];
  find?: () => string | undefined;
  usedBy: string;
}
export declare const PREREQS: readonly Prereq[];
export declare function prereq(debian: string): Prereq;
export declare function locate(row: Prereq): string | undefined;
export declare function missingMessage(row: Prereq): string;

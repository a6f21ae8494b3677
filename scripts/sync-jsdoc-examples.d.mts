/** Types of scripts/sync-jsdoc-examples.mjs. */
export interface Region {
  file: string;
  where: string;
  lines: string[];
}
export declare const EXAMPLES_DIR: string;
export declare const ENTRY_MODULES: readonly string[];
export declare function productFiles(): string[];
export declare function collectRegions(): { regions: Map<string, Region>; problems: string[] };
export declare function exampleLines(region: Region, indent: string): string[];
export declare function syncText(text: string, regions: Map<string, Region>): { text: string; placed: string[] };
export declare function plan(filter?: (file: string) => boolean): {
  changes: { file: string; text: string }[];
  problems: string[];
  regions: Map<string, Region>;
};

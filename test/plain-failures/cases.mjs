// The labelled plain-failure corpus: which real reference MCP server is started how, which
// call is made, and the category (and retryability) a careful reader gives the failure. Shared
// by scripts/plain-failure-corpus.mjs (which records what each server answered) and the corpus
// test (which replays every case through the gateway). Labels are a human judgement of the
// failure, made before and independently of the shipped rules.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(fileURLToPath(import.meta.url), '../../..');
const nm = (p) => join(repoRoot, 'node_modules', p);

/**
 * Lays out the files the servers work on: an allowed directory for server-filesystem (with a file,
 * a subdirectory and a symlink out of it) and a git repository with one commit.
 */
export function prepareWorkspace() {
  const root = mkdtempSync(join(tmpdir(), 'te-corpus-'));
  const allowed = join(root, 'allowed');
  mkdirSync(join(allowed, 'sub'), { recursive: true });
  writeFileSync(join(allowed, 'note.txt'), 'hello\nworld\n');
  writeFileSync(join(root, 'outside.txt'), 'secret\n');
  const repo = join(root, 'repo');
  mkdirSync(repo);
  const git = (...args) =>
    execFileSync('git', args, {
      cwd: repo,
      stdio: 'ignore',
      env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.org', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.org' },
    });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'a.txt'), 'a\n');
  git('add', 'a.txt');
  git('commit', '-q', '-m', 'first');
  mkdirSync(join(root, 'plain'));
  return { root, allowed, repo, plain: join(root, 'plain') };
}

/** How each server is started (a stdio command line), given the workspace. */
export function serverSpecs(ws) {
  return {
    filesystem: { name: 'filesystem', command: process.execPath, args: [nm('@modelcontextprotocol/server-filesystem/dist/index.js'), ws.allowed] },
    memory: {
      name: 'memory',
      command: process.execPath,
      args: [nm('@modelcontextprotocol/server-memory/dist/index.js')],
      env: { MEMORY_FILE_PATH: join(ws.root, 'memory.jsonl') },
    },
    everything: { name: 'everything', command: process.execPath, args: [nm('@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'] },
    'sequential-thinking': {
      name: 'sequential-thinking',
      command: process.execPath,
      args: [nm('@modelcontextprotocol/server-sequential-thinking/dist/index.js')],
      env: { DISABLE_THOUGHT_LOGGING: 'true' },
    },
    git: {
      name: 'git',
      command: process.execPath,
      args: [nm('@cyanheads/git-mcp-server/dist/index.js')],
      env: { MCP_LOG_LEVEL: 'error', MCP_TRANSPORT_TYPE: 'stdio', GIT_SIGN_COMMITS: 'false' },
    },
  };
}

/** The same command line with the machine's paths replaced, as recorded in the corpus. */
export function displayCommand(spec, ws) {
  return [spec.command === process.execPath ? 'node' : spec.command, ...(spec.args ?? [])]
    .map((a) => a.replace(join(repoRoot, 'node_modules') + '/', '').replace(ws.root, '$WS'))
    .join(' ');
}

const c = (server, tool, args, category, retryable, note) => ({ server, tool, args, label: { category, retryable }, note });
const NT = 'no-target';
const IA = 'invalid-argument';
const EL = 'elevation';
const IN = 'internal';

/** The cases; `args` may be a function of the workspace. */
export const CASES = [
  // server-filesystem
  c('filesystem', 'read_text_file', (w) => ({ path: join(w.allowed, 'missing.txt') }), NT, false),
  c('filesystem', 'read_file', (w) => ({ path: join(w.allowed, 'nope', 'x.txt') }), NT, false),
  c('filesystem', 'read_text_file', (w) => ({ path: join(w.root, 'outside.txt') }), EL, false),
  c('filesystem', 'read_text_file', () => ({ path: '/etc/passwd' }), EL, false),
  c('filesystem', 'read_text_file', (w) => ({ path: w.allowed + '/sub' }), IA, false, 'a directory, not a file'),
  c('filesystem', 'read_text_file', (w) => ({ path: join(w.allowed, 'note.txt'), head: 1, tail: 1 }), IA, false),
  c('filesystem', 'read_text_file', () => ({}), IA, false),
  c('filesystem', 'read_text_file', () => ({ path: 42 }), IA, false),
  c('filesystem', 'read_media_file', (w) => ({ path: join(w.allowed, 'missing.png') }), NT, false),
  c('filesystem', 'read_multiple_files', () => ({ paths: 'not-a-list' }), IA, false),
  c('filesystem', 'write_file', (w) => ({ path: join(w.root, 'evil.txt'), content: 'x' }), EL, false),
  c('filesystem', 'write_file', (w) => ({ path: join(w.allowed, 'x.txt') }), IA, false),
  c('filesystem', 'write_file', (w) => ({ path: join(w.allowed, 'no', 'such', 'dir', 'x.txt'), content: 'x' }), NT, false),
  c(
    'filesystem',
    'edit_file',
    (w) => ({ path: join(w.allowed, 'note.txt'), edits: [{ oldText: 'absent text', newText: 'y' }] }),
    NT,
    false,
    'the text to replace is not there',
  ),
  c('filesystem', 'edit_file', (w) => ({ path: join(w.allowed, 'missing.txt'), edits: [{ oldText: 'a', newText: 'b' }] }), NT, false),
  c('filesystem', 'edit_file', (w) => ({ path: join(w.allowed, 'note.txt'), edits: 'x' }), IA, false),
  c('filesystem', 'create_directory', (w) => ({ path: join(w.root, 'outdir') }), EL, false),
  c('filesystem', 'list_directory', (w) => ({ path: join(w.allowed, 'missing-dir') }), NT, false),
  c('filesystem', 'list_directory', (w) => ({ path: join(w.allowed, 'note.txt') }), IA, false, 'a file, not a directory'),
  c('filesystem', 'list_directory', (w) => ({ path: w.root }), EL, false),
  c('filesystem', 'list_directory_with_sizes', (w) => ({ path: w.allowed, sortBy: 'colour' }), IA, false),
  c('filesystem', 'directory_tree', (w) => ({ path: join(w.allowed, 'gone') }), NT, false),
  c('filesystem', 'move_file', (w) => ({ source: join(w.allowed, 'missing.txt'), destination: join(w.allowed, 'm.txt') }), NT, false),
  c('filesystem', 'move_file', (w) => ({ source: join(w.allowed, 'note.txt'), destination: join(w.root, 'stolen.txt') }), EL, false),
  c('filesystem', 'search_files', (w) => ({ path: join(w.allowed, 'gone'), pattern: '*.txt' }), NT, false),
  c('filesystem', 'search_files', (w) => ({ path: w.allowed }), IA, false),
  c('filesystem', 'get_file_info', (w) => ({ path: join(w.allowed, 'ghost.txt') }), NT, false),
  c('filesystem', 'get_file_info', () => ({ path: '/root' }), EL, false),
  c('filesystem', 'no_such_tool', () => ({}), NT, false),
  // server-memory
  c('memory', 'create_entities', () => ({}), IA, false),
  c('memory', 'create_entities', () => ({ entities: [{ name: 'a' }] }), IA, false),
  c('memory', 'create_entities', () => ({ entities: 'alice' }), IA, false),
  c('memory', 'add_observations', () => ({ observations: [{ entityName: 'nobody', contents: ['x'] }] }), NT, false),
  c('memory', 'add_observations', () => ({ observations: [{ entityName: 'nobody' }] }), IA, false),
  c('memory', 'create_relations', () => ({ relations: [{ from: 'a' }] }), IA, false),
  c('memory', 'delete_entities', () => ({ entityNames: 'a' }), IA, false),
  c('memory', 'delete_observations', () => ({ deletions: [{ entityName: 'x' }] }), IA, false),
  c('memory', 'delete_relations', () => ({}), IA, false),
  c('memory', 'search_nodes', () => ({ query: 7 }), IA, false),
  c('memory', 'open_nodes', () => ({ names: 'a' }), IA, false),
  c('memory', 'forget_everything', () => ({}), NT, false),
  // server-everything
  c('everything', 'get-sum', () => ({ a: 'two', b: 1 }), IA, false),
  c('everything', 'get-sum', () => ({ a: 1 }), IA, false),
  c('everything', 'echo', () => ({}), IA, false),
  c('everything', 'echo', () => ({ message: 5 }), IA, false),
  c('everything', 'get-annotated-message', () => ({ messageType: 'shout' }), IA, false),
  c('everything', 'get-resource-reference', () => ({ resourceType: 'Video', resourceId: 1 }), IA, false),
  c('everything', 'get-resource-reference', () => ({ resourceType: 'Text', resourceId: 0 }), IA, false),
  c('everything', 'get-resource-links', () => ({ count: 1000 }), IA, false),
  c('everything', 'get-structured-content', () => ({ location: 'Atlantis' }), IA, false),
  c('everything', 'trigger-long-running-operation', () => ({ duration: 'soon' }), IA, false),
  c(
    'everything',
    'gzip-file-as-resource',
    () => ({ name: 'x.gz', data: 'http://127.0.0.1:9/none', outputType: 'resource' }),
    IN,
    false,
    'the fetch of an unreachable URL: the text says nothing more',
  ),
  c('everything', 'gzip-file-as-resource', () => ({ name: 'x.gz', data: 'data:text/plain,hi', outputType: 'floppy' }), IA, false),
  c('everything', 'not-a-tool', () => ({}), NT, false),
  // server-sequential-thinking
  c('sequential-thinking', 'sequentialthinking', () => ({}), IA, false),
  c('sequential-thinking', 'sequentialthinking', () => ({ thought: 'x' }), IA, false),
  c('sequential-thinking', 'sequentialthinking', () => ({ thought: 'x', nextThoughtNeeded: 'yes', thoughtNumber: 1, totalThoughts: 1 }), IA, false),
  c('sequential-thinking', 'sequentialthinking', () => ({ thought: 'x', nextThoughtNeeded: true, thoughtNumber: 0, totalThoughts: 1 }), IA, false),
  c('sequential-thinking', 'sequentialthinking', () => ({ thought: 'x', nextThoughtNeeded: true, thoughtNumber: -3, totalThoughts: 2 }), IA, false),
  c('sequential-thinking', 'sequentialthinking', () => ({ thought: 12, nextThoughtNeeded: true, thoughtNumber: 1, totalThoughts: 2 }), IA, false),
  c('sequential-thinking', 'think_harder', () => ({}), NT, false),
  // git-mcp-server (@cyanheads)
  c('git', 'git_status', (w) => ({ path: w.plain }), NT, false, 'not a repository'),
  c('git', 'git_status', (w) => ({ path: join(w.root, 'nowhere') }), NT, false),
  c('git', 'git_log', (w) => ({ path: w.repo, branch: 'no-such-branch' }), NT, false),
  c('git', 'git_show', (w) => ({ path: w.repo, object: 'deadbeefdeadbeef' }), NT, false),
  c('git', 'git_checkout', (w) => ({ path: w.repo, target: 'ghost-branch' }), NT, false),
  c('git', 'git_diff', (w) => ({ path: w.repo, target: 'nope1', source: 'nope2' }), NT, false),
  c('git', 'git_branch', (w) => ({ path: w.repo, mode: 'delete', branchName: 'ghost' }), NT, false),
  c('git', 'git_branch', (w) => ({ path: w.repo, mode: 'fly' }), IA, false),
  c('git', 'git_blame', (w) => ({ path: w.repo, filePath: 'missing.txt' }), NT, false),
  c('git', 'git_commit', (w) => ({ path: w.repo }), IA, false),
  c('git', 'git_tag', (w) => ({ path: w.repo, mode: 'delete', tagName: 'v9' }), NT, false),
  c('git', 'git_merge', (w) => ({ path: w.repo, branch: 'phantom' }), NT, false),
  c('git', 'git_log', (w) => ({ path: w.repo, maxCount: 'ten' }), IA, false),
  c('git', 'git_reset', (w) => ({ path: w.repo, mode: 'sideways' }), IA, false),
  c('git', 'git_no_tool', () => ({}), NT, false),
];

/**
 * The accuracy report of classified cases: `results` holds, per case, its label and what was
 * read (`category`, `retryable`, `rule`: the matched rule id or null).
 */
export function accuracy(results) {
  const n = results.length;
  const agree = results.filter((r) => r.category === r.label.category).length;
  const wrongRetryable = results.filter((r) => r.retryable === true && r.label.retryable !== true);
  const unmatched = results.filter((r) => r.rule === null).length;
  return {
    cases: n,
    servers: new Set(results.map((r) => r.server)).size,
    categoryAgreement: n === 0 ? 0 : agree / n,
    wrongRetryableTrue: wrongRetryable.length,
    unmatchedRate: n === 0 ? 0 : unmatched / n,
    disagreements: results.filter((r) => r.category !== r.label.category).map((r) => `${r.server}/${r.tool}: ${r.category} (label ${r.label.category})`),
  };
}

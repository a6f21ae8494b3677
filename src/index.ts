/**
 * tool-envelope: one result envelope and one error vocabulary for every AI-agent tool.
 * The root export is the dependency-free core; adapters live in their own subpaths
 * (`tool-envelope/runtime`, `/store`, `/store/sqlite`, `/store/postgres`, `/mcp`, `/otel`, and the agent
 * frameworks `/ai-sdk`, `/openai-agents`, `/langchain`).
 */
export * from 'tool-envelope/core';

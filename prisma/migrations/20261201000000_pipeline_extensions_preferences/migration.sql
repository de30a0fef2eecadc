-- LangBot's extensions_preferences of a pipeline: which MCP servers its runs may use
-- (enable_all_mcp_servers, absent meaning true, and mcp_servers). Existing pipelines keep every server.
ALTER TABLE "Pipeline" ADD COLUMN "extensionsPreferences" JSONB NOT NULL DEFAULT '{}';

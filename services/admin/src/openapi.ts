// The OpenAPI document at /api/docs: routes from the controllers (@nestjs/swagger), request and
// response schemas generated from the same zod schemas the service validates with, so the document
// cannot drift from what the API accepts.
import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { z } from 'zod';
import { AdminApi } from '@conveyor/contracts';

type Operation = { requestBody?: unknown; responses?: Record<string, unknown>; security?: unknown; tags?: string[]; summary?: string };

/** `METHOD path` → the schema names of its body and answer (`Page:X` for a page of X). */
const SHAPES: Record<string, { body?: string; answer?: string; upload?: string; zip?: true; csv?: true }> = {
  'GET /auth/status': { answer: 'AuthStatus' },
  'POST /auth/setup': { body: 'SetupRequest', answer: 'Me' },
  'POST /auth/login': { body: 'LoginRequest', answer: 'Me' },
  'GET /auth/me': { answer: 'Me' },
  'GET /users': { answer: 'Page:User' },
  'POST /users': { body: 'UserCreate', answer: 'User' },
  'PATCH /users/{username}': { body: 'UserUpdate', answer: 'User' },
  'GET /tokens': { answer: 'Page:ApiToken' },
  'POST /tokens': { body: 'ApiTokenCreate', answer: 'ApiTokenCreated' },
  'GET /models': { answer: 'Page:Model' },
  'GET /models/{id}': { answer: 'Model' },
  'POST /models': { body: 'ModelCreate', answer: 'Model' },
  'PATCH /models/{id}': { body: 'ModelUpdate', answer: 'Model' },
  'POST /models/{id}/test': { answer: 'ModelTestResult' },
  'GET /model-presets': { answer: 'ModelPresetList' },
  'GET /pipelines': { answer: 'Page:Pipeline' },
  'GET /pipelines/{id}': { answer: 'Pipeline' },
  'POST /pipelines': { body: 'PipelineCreate', answer: 'Pipeline' },
  'POST /pipelines/validate': { body: 'PipelineValidate', answer: 'PipelineValidation' },
  'PATCH /pipelines/{id}': { body: 'PipelineUpdate', answer: 'Pipeline' },
  'POST /pipelines/{id}/copy': { body: 'PipelineCopy', answer: 'Pipeline' },
  'GET /platforms': { answer: 'PlatformList' },
  'GET /bots': { answer: 'Page:Bot' },
  'GET /bots/{id}': { answer: 'Bot' },
  'POST /bots': { body: 'BotCreate', answer: 'Bot' },
  'PATCH /bots/{id}': { body: 'BotUpdate', answer: 'Bot' },
  'GET /mcp-servers': { answer: 'Page:McpServer' },
  'GET /mcp-servers/{id}': { answer: 'McpServer' },
  'POST /mcp-servers': { body: 'McpServerCreate', answer: 'McpServer' },
  'PATCH /mcp-servers/{id}': { body: 'McpServerUpdate', answer: 'McpServer' },
  'POST /mcp-servers/{id}/test': { answer: 'McpServerTestResult' },
  'GET /queries': { answer: 'Page:QueryLogEntry' },
  'GET /queries/{id}': { answer: 'QueryLogEntry' },
  'GET /queries/{id}/timeline': { answer: 'QueryTimeline' },
  'GET /monitoring/summary': { answer: 'MonitoringSummary' },
  'GET /monitoring/errors': { answer: 'Page:QueryLogEntry' },
  'GET /monitoring/sessions': { answer: 'MonitoringSessionPage' },
  'GET /monitoring/sessions/conversations': { answer: 'SessionConversations' },
  'GET /monitoring/queries.csv': { csv: true },
  'GET /dead-letters': { answer: 'Page:DeadLetterEntry' },
  'GET /dead-letters/{seq}': { answer: 'DeadLetterEntry' },
  'POST /dead-letters/{seq}/resubmit': { answer: 'DeadLetterResubmitted' },
  'GET /audit': { answer: 'Page:AuditEntry' },
  'GET /settings': { answer: 'InstanceSettings' },
  'PUT /settings': { body: 'InstanceSettingsUpdate', answer: 'InstanceSettings' },
  'GET /routes': { answer: 'RouteTable' },
  'GET /knowledge-bases': { answer: 'Page:KnowledgeBase' },
  'GET /knowledge-bases/{id}': { answer: 'KnowledgeBase' },
  'POST /knowledge-bases': { body: 'KnowledgeBaseCreate', answer: 'KnowledgeBase' },
  'PATCH /knowledge-bases/{id}': { body: 'KnowledgeBaseUpdate', answer: 'KnowledgeBase' },
  'GET /knowledge-bases/{id}/documents': { answer: 'Page:KnowledgeDocument' },
  'POST /knowledge-bases/{id}/documents': { upload: AdminApi.KNOWLEDGE_UPLOAD_FIELD, answer: 'KnowledgeDocumentUploaded' },
  'POST /knowledge-bases/{id}/documents/{documentId}/reindex': { answer: 'KnowledgeDocument' },
  'GET /bots/{id}/endpoint': { answer: 'BotEndpoint' },
  'GET /plugins': { answer: 'PluginList' },
  'GET /plugins/{name}/settings': { answer: 'PluginSettings' },
  'GET /takeovers': { answer: 'TakeoverList' },
  'POST /takeovers': { body: 'TakeoverCreate', answer: 'Takeover' },
  'POST /takeovers/reply': { body: 'OperatorReply', answer: 'Takeover' },
  'PUT /plugins/{name}/settings': { body: 'PluginSettingsUpdate', answer: 'PluginSettings' },
  'GET /skills': { answer: 'Page:Skill' },
  'GET /skills/{name}': { answer: 'SkillDetail' },
  'POST /skills': { zip: true, answer: 'SkillInstalled' },
  'POST /skills/from-workspace': { body: 'SkillFromWorkspace', answer: 'SkillInstalled' },
  'GET /sandbox/workspaces': { answer: 'Page:SandboxWorkspace' },
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const content = (name: string) => ({
  'application/json': {
    schema: name.startsWith('Page:') ? { type: 'object', properties: { items: { type: 'array', items: ref(name.slice(5)) }, nextCursor: { type: 'string', nullable: true } }, required: ['items', 'nextCursor'] } : ref(name),
  },
});

export function buildOpenApi(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Conveyor admin API')
    .setDescription('Configuration, users, tokens, the query log and dead letters. Errors are `AdminError`; writes need `If-Match` (or a body `version`).')
    .setVersion('1')
    .addCookieAuth(AdminApi.ADMIN_SESSION_COOKIE)
    .addBearerAuth()
    .build();
  const document = SwaggerModule.createDocument(app, config);
  const schemas: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(AdminApi)) {
    if (value instanceof z.ZodType) schemas[name] = z.toJSONSchema(value, { target: 'openapi-3.0', unrepresentable: 'any', io: name.endsWith('Create') || name.endsWith('Update') || name.endsWith('Request') ? 'input' : 'output' });
  }
  // zod's JSON Schema type and Nest's SchemaObject describe the same OpenAPI 3.0 objects.
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...(schemas as NonNullable<OpenAPIObject['components']>['schemas']) } };
  for (const [path, item] of Object.entries(document.paths)) {
    const relative = path.replace(/^\/api\/v1/, '');
    for (const [method, value] of Object.entries(item)) {
      if (value === null || typeof value !== 'object' || !('responses' in value)) continue;
      const op: Operation = value;
      const shape = SHAPES[`${method.toUpperCase()} ${relative}`];
      op.tags = [relative.split('/')[1] ?? 'api'];
      if (shape?.body) op.requestBody = { required: true, content: content(shape.body) };
      // One document as a multipart file field, at most LIMITS.knowledgeDocumentBytes.
      if (shape?.upload) op.requestBody = { required: true, content: { 'multipart/form-data': { schema: { type: 'object', properties: { [shape.upload]: { type: 'string', format: 'binary' } }, required: [shape.upload] } } } };
      // A skill's folder as a zip, the body itself (at most SKILL_LIMITS.uploadBytes).
      if (shape?.zip) op.requestBody = { required: true, content: { [AdminApi.SKILL_UPLOAD_CONTENT_TYPE]: { schema: { type: 'string', format: 'binary' } } } };
      const ok = Object.keys(op.responses ?? {})[0] ?? '200';
      op.responses = {
        ...(shape?.answer ? { [ok]: { description: 'OK', content: content(shape.answer) } } : op.responses),
        // The query log of the range as CSV (RFC 4180, a header line, oldest first).
        ...(shape?.csv ? { [ok]: { description: 'OK', content: { 'text/csv': { schema: { type: 'string' } } } } } : {}),
        // An install answers 201 with a new skill, 200 with a new revision of one of the same name.
        ...(shape?.answer === 'SkillInstalled' ? { '200': { description: 'Replaced', content: content(shape.answer) }, '201': { description: 'Created', content: content(shape.answer) } } : {}),
        default: { description: 'AdminError: 400 validation_failed, 401, 403, 404, 409 version_conflict/conflict, 428', content: content('AdminError') },
      };
    }
  }
  return document;
}

export function serveOpenApi(app: INestApplication): void {
  SwaggerModule.setup('api/docs', app, () => buildOpenApi(app), { jsonDocumentUrl: 'api/docs-json' });
}

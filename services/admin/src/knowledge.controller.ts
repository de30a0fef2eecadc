import { Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query, UploadedFile, UseInterceptors, Body } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { AdminApi, LIMITS } from '@conveyor/contracts';
import { AdminApiError, type KnowledgeBases, type Principal } from '@conveyor/admin';
import { Caller, parse, StorableId } from './http.js';
import { KNOWLEDGE_BASES } from './tokens.js';

/** Multer's view of one uploaded file (memory storage). */
interface UploadedDocument {
  originalname: string;
  buffer: Buffer;
}

/**
 * Knowledge bases and their documents. An upload is one multipart file of at most
 * LIMITS.knowledgeDocumentBytes, held in memory (multer's default storage) only until it is stored (the guard runs first, so an
 * unauthenticated upload is refused before its body is read).
 */
@Controller('api/v1/knowledge-bases')
export class KnowledgeBasesController {
  constructor(@Inject(KNOWLEDGE_BASES) private readonly kbs: KnowledgeBases) {}

  @Get()
  list(@Query() query: unknown) {
    return this.kbs.list(parse(AdminApi.PageQuery, query, 'query'));
  }

  @Get(':id')
  get(@Param('id', StorableId) id: string) {
    return this.kbs.get(id);
  }

  @Post()
  create(@Caller() caller: Principal, @Body() body: unknown) {
    return this.kbs.create(caller, parse(AdminApi.KnowledgeBaseCreate, body, 'body'));
  }

  @Patch(':id')
  update(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Body() body: unknown) {
    return this.kbs.update(caller, id, parse(AdminApi.KnowledgeBaseUpdate, body, 'body'));
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Caller() caller: Principal, @Param('id', StorableId) id: string) {
    await this.kbs.remove(caller, id);
  }

  @Get(':id/documents')
  documents(@Param('id', StorableId) id: string, @Query() query: unknown) {
    return this.kbs.documents(id, parse(AdminApi.PageQuery, query, 'query'));
  }

  @Post(':id/documents')
  @UseInterceptors(FileInterceptor(AdminApi.KNOWLEDGE_UPLOAD_FIELD, { limits: { fileSize: LIMITS.knowledgeDocumentBytes, files: 1, fields: 0, parts: 1 } }))
  upload(@Caller() caller: Principal, @Param('id', StorableId) id: string, @UploadedFile() file: UploadedDocument | undefined): Promise<AdminApi.KnowledgeDocumentUploaded> {
    if (!file) throw AdminApiError.invalid(`body.${AdminApi.KNOWLEDGE_UPLOAD_FIELD}`, `send the document as the multipart/form-data field "${AdminApi.KNOWLEDGE_UPLOAD_FIELD}"`);
    // Multer reads the file name as Latin-1; browsers send UTF-8.
    const name = Buffer.from(file.originalname, 'latin1').toString('utf8');
    return this.kbs.upload(caller, id, { name, content: file.buffer });
  }

  @Post(':id/documents/:documentId/reindex')
  @HttpCode(200)
  reindex(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Param('documentId', StorableId) documentId: string) {
    return this.kbs.reindex(caller, id, documentId);
  }

  @Delete(':id/documents/:documentId')
  @HttpCode(204)
  async removeDocument(@Caller() caller: Principal, @Param('id', StorableId) id: string, @Param('documentId', StorableId) documentId: string) {
    await this.kbs.removeDocument(caller, id, documentId);
  }
}

import { Body, Controller, Delete, Get, HttpCode, Inject, Injectable, Param, Post, Query, Req, Res, type PipeTransform } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AdminApi, SANDBOX_LIMITS, SkillName, storableText } from '@conveyor/contracts';
import { AdminApiError, type Principal, type Skills } from '@conveyor/admin';
import { SKILL_LIMITS } from '@conveyor/sandbox/skills';
import { Caller, parse, rawBody } from './http.js';
import { SKILLS } from './tokens.js';

/** The content types a skill zip may be sent as: the contract's, and what a client that names no type sends. */
export const SKILL_UPLOAD_TYPES = [AdminApi.SKILL_UPLOAD_CONTENT_TYPE, 'application/octet-stream', 'application/x-zip-compressed'] as const;
/**
 * Bytes of an upload's body the API reads: the upload bound and some slack, so a zip just past the
 * bound is refused by the skill reader with its reason (400), and anything larger is not read (413).
 */
export const SKILL_UPLOAD_BODY_LIMIT = SKILL_LIMITS.uploadBytes + 64 * 1024;

/** A path's skill name: one that can be no skill's name is no skill (404), and reaches no query. */
@Injectable()
export class SkillNameParam implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!SkillName.safeParse(value).success) throw new AdminApiError('not_found', `skill ${JSON.stringify(value.slice(0, 100))} does not exist`, { field: 'path.name' });
    return value;
  }
}

/** A path's workspace id: the rendered template may be longer than other ids, never unstorable text. */
@Injectable()
export class WorkspaceIdParam implements PipeTransform<string, string> {
  transform(value: string): string {
    if (value.length > SANDBOX_LIMITS.workspaceIdChars || storableText(value) !== value) throw new AdminApiError('not_found', 'path.id: no such sandbox workspace', { field: 'path.id' });
    return value;
  }
}

/**
 * Installed Agent Skills. An upload is the zip itself as the body (application/zip), read only after
 * the guard let the caller through and only up to SKILL_UPLOAD_BODY_LIMIT; the skill reader then
 * holds it to the skill's bounds (paths, links, files, unpacked bytes) before anything is stored.
 */
@Controller('api/v1/skills')
export class SkillsController {
  constructor(@Inject(SKILLS) private readonly skills: Skills) {}

  @Get()
  list(@Query() query: unknown) {
    return this.skills.list(parse(AdminApi.PageQuery, query, 'query'));
  }

  @Get(':name')
  get(@Param('name', SkillNameParam) name: string): Promise<AdminApi.SkillDetail> {
    return this.skills.get(name);
  }

  /** 201 with a new skill, 200 with a new revision of one of the same name. */
  @Post()
  async upload(@Caller() caller: Principal, @Req() req: Request, @Res() res: Response): Promise<void> {
    const zip = await rawBody(req, res, SKILL_UPLOAD_TYPES, SKILL_UPLOAD_BODY_LIMIT);
    if (zip.byteLength === 0) throw AdminApiError.invalid('body', `send the skill's folder as a zip (Content-Type: ${AdminApi.SKILL_UPLOAD_CONTENT_TYPE})`);
    const installed = await this.skills.upload(caller, zip);
    res.status(installed.outcome === 'created' ? 201 : 200).json(installed);
  }

  @Post('from-workspace')
  async fromWorkspace(@Caller() caller: Principal, @Body() body: unknown, @Res() res: Response): Promise<void> {
    const input = parse(AdminApi.SkillFromWorkspace, body, 'body');
    // Text Postgres cannot store (NUL, a lone surrogate) names no stored workspace, and reaches no query.
    if (storableText(input.workspace) !== input.workspace) throw new AdminApiError('not_found', `body.workspace: workspace ${JSON.stringify(input.workspace.slice(0, 100))} does not exist`, { field: 'body.workspace' });
    const installed = await this.skills.fromWorkspace(caller, input);
    res.status(installed.outcome === 'created' ? 201 : 200).json(installed);
  }

  @Delete(':name')
  @HttpCode(204)
  async remove(@Caller() caller: Principal, @Param('name', SkillNameParam) name: string): Promise<void> {
    await this.skills.remove(caller, name);
  }
}

/** The workspaces the sandbox keeps between calls: listed (sizes, last use) and deleted. */
@Controller('api/v1/sandbox/workspaces')
export class SandboxWorkspacesController {
  constructor(@Inject(SKILLS) private readonly skills: Skills) {}

  @Get()
  list(@Query() query: unknown) {
    return this.skills.listWorkspaces(parse(AdminApi.PageQuery, query, 'query'));
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Caller() caller: Principal, @Param('id', WorkspaceIdParam) id: string): Promise<void> {
    await this.skills.removeWorkspace(caller, id);
  }
}

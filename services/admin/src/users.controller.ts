import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post } from '@nestjs/common';
import { AdminApi } from '@conveyor/contracts';
import type { AuthStore, Principal } from '@conveyor/admin';
import { AUTH_STORE, Caller, parse, StorableId, RequireRole, RequireSession } from './http.js';

@Controller('api/v1')
@RequireRole('admin')
export class UsersController {
  constructor(@Inject(AUTH_STORE) private readonly auth: AuthStore) {}

  @Get('users')
  async list() {
    return { items: await this.auth.listUsers(), nextCursor: null };
  }

  @Post('users')
  create(@Caller() caller: Principal, @Body() body: unknown) {
    return this.auth.createUser(caller, parse(AdminApi.UserCreate, body, 'body'));
  }

  @Patch('users/:username')
  update(@Caller() caller: Principal, @Param('username', StorableId) username: string, @Body() body: unknown) {
    return this.auth.updateUser(caller, username, parse(AdminApi.UserUpdate, body, 'body'));
  }

  @Delete('users/:username')
  @HttpCode(204)
  async remove(@Caller() caller: Principal, @Param('username', StorableId) username: string) {
    await this.auth.deleteUser(caller, username);
  }

  @Get('tokens')
  async tokens() {
    return { items: await this.auth.listTokens(), nextCursor: null };
  }

  /** A token is minted by a signed-in user only: a leaked token cannot make itself a successor. */
  @Post('tokens')
  @RequireSession()
  createToken(@Caller() caller: Principal, @Body() body: unknown) {
    return this.auth.createToken(caller, parse(AdminApi.ApiTokenCreate, body, 'body'));
  }

  @Delete('tokens/:id')
  @HttpCode(204)
  async revokeToken(@Caller() caller: Principal, @Param('id', StorableId) id: string) {
    await this.auth.revokeToken(caller, id);
  }
}

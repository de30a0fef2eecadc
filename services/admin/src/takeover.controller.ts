import { Body, Controller, Delete, Get, HttpCode, Inject, Post, Query } from '@nestjs/common';
import { AdminApi } from '@conveyor/contracts';
import { Takeovers, type ConfigStore, type Principal } from '@conveyor/admin';
import { publishTakeoverEvent, requestDirectSend } from '@conveyor/bus';
import type { Infra } from '@conveyor/service-kit';
import { Caller, parse } from './http.js';
import { CONFIG_STORE, TAKEOVERS } from './tokens.js';

/** Human takeover as this admin replica runs it: changes announced on the bus, operator replies sent through a dispatcher. */
export function takeovers(infra: Infra): Takeovers {
  return new Takeovers(infra.prisma, {
    announce: async (event) => {
      // Stored first: a replica that misses this reads it within a minute (and at its start).
      try {
        await publishTakeoverEvent(infra.nc, infra.topology.subjects.takeoverEvents, event);
      } catch (err) {
        infra.logger.warn({ err: (err as Error).message, chat: event.chat }, 'takeover change not announced; replicas read it at their next resync');
      }
    },
    send: (request) => requestDirectSend(infra.nc, infra.topology.prefix, request),
  });
}

/** Human takeover: list, take, reply as the bot, hand back (writes for admins; viewers read). */
@Controller('api/v1/takeovers')
export class TakeoverController {
  constructor(@Inject(TAKEOVERS) private readonly takeovers: Takeovers) {}

  @Get()
  list(): Promise<AdminApi.TakeoverList> {
    return this.takeovers.list();
  }

  @Post()
  take(@Caller() caller: Principal, @Body() body: unknown): Promise<AdminApi.Takeover> {
    return this.takeovers.take(caller, parse(AdminApi.TakeoverCreate, body, 'body'));
  }

  @Post('reply')
  @HttpCode(200)
  reply(@Caller() caller: Principal, @Body() body: unknown): Promise<AdminApi.Takeover> {
    return this.takeovers.reply(caller, parse(AdminApi.OperatorReply, body, 'body'));
  }

  @Delete()
  @HttpCode(204)
  async handBack(@Caller() caller: Principal, @Query() query: unknown): Promise<void> {
    await this.takeovers.handBack(caller, parse(AdminApi.TakeoverTarget, query, 'query'));
  }
}

/** Chats that asked for a person: list (viewers; reasons under the message-text rule), dismiss (admins). */
@Controller('api/v1/human-requests')
export class HumanRequestController {
  constructor(@Inject(TAKEOVERS) private readonly takeovers: Takeovers, @Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  @Get()
  async list(): Promise<AdminApi.HumanRequestList> {
    const settings = await this.store.getSettings();
    return this.takeovers.waiting(settings.monitoring.showMessageText === true);
  }

  @Delete()
  @HttpCode(204)
  async dismiss(@Caller() caller: Principal, @Query() query: unknown): Promise<void> {
    await this.takeovers.dismiss(caller, parse(AdminApi.TakeoverTarget, query, 'query'));
  }
}

import { ToolNotFoundError, type ToolBox } from './tools.js';

/** The tool's name as the model sees it. */
export const HUMAN_REQUEST_TOOL = 'request_human';
const MAX_REASON = 1_000;

/**
 * The model's way to ask for a person: `request` records the chat as waiting for an operator (and
 * says whether it started waiting now, or already was). The model is told either way, so it can say
 * so to the user; the run goes on.
 */
export function humanRequestToolBox(request: (reason: string) => Promise<boolean>): ToolBox {
  return {
    definitions: () => [{
      type: 'function',
      function: {
        name: HUMAN_REQUEST_TOOL,
        description: 'Ask a human operator to take over this conversation: when the user asks for a person, or when you cannot help and a person should. Operators are notified and will answer in this chat; tell the user so.',
        parameters: {
          type: 'object',
          properties: { reason: { type: 'string', description: 'Why a person is needed, in one sentence, for the operator.', maxLength: MAX_REASON } },
          required: ['reason'],
        },
      },
    }],
    call: async (name, args) => {
      if (name !== HUMAN_REQUEST_TOOL) throw new ToolNotFoundError(name);
      const reason = typeof args.reason === 'string' && args.reason.trim() ? args.reason.trim().slice(0, MAX_REASON) : 'the model asked for a person';
      const startedNow = await request(reason);
      return { status: startedNow ? 'operators_notified' : 'already_waiting_for_an_operator' };
    },
  };
}

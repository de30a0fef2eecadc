import type { MessageChain, MessageComponent } from '@conveyor/contracts';

/**
 * LangBot's str(chain): the text rules, filters and commands look at. Source renders nothing. Quote
 * renders its origin's text, not the pydantic repr LangBot's Quote leaks (it has no __str__), so a quoted
 * message cannot trip prefix rules or commands with repr noise.
 */
export function chainText(chain: readonly MessageComponent[]): string {
  return chain.map(componentText).join('');
}

function componentText(c: MessageComponent): string {
  switch (c.type) {
    case 'Plain': return c.text;
    case 'At': return `@${c.display || c.target}`;
    case 'AtAll': return '@All';
    case 'Image': return '[Image]';
    case 'Voice': return '[Voice]';
    case 'File': return `[File]${c.name}`;
    case 'Forward': return '[Chat history]';
    case 'Unknown': return c.text;
    case 'Quote': return '';
    default: return '';
  }
}

export function plain(text: string): MessageChain {
  return [{ type: 'Plain', text }];
}

export function isTextOnly(chain: readonly MessageComponent[]): boolean {
  return chain.every((c) => c.type === 'Plain' || c.type === 'Source');
}

/** Python's len(): code points, not UTF-16 units. */
export function pyLen(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

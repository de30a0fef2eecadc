/** `output.misc.remove-think`: drops `<think>` blocks, and an unclosed one while it is still streaming. */
export function removeThink(text: string): string {
  return text.replace(/<think>[\s\S]*?<\/think>\s*/g, '').replace(/<think>[\s\S]*$/, '');
}

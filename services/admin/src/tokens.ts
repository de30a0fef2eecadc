export const CONFIG_STORE = Symbol('ConfigStore');
export const SECRET_BOX = Symbol('SecretBox');
export const DEAD_LETTERS = Symbol('DeadLetters');
export const KNOWLEDGE_BASES = Symbol('KnowledgeBases');
export const SKILLS = Symbol('Skills');
export const TAKEOVERS = Symbol('Takeovers');

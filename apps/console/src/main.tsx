import { createRoot } from 'react-dom/client';
import { PipelineConfigSchema } from '@conveyor/pipeline/config';
import { z } from 'zod';

const root = document.getElementById('root');
if (root) createRoot(root).render(<pre>{JSON.stringify(z.toJSONSchema(PipelineConfigSchema, { io: 'output', unrepresentable: 'any' }), null, 2)}</pre>);

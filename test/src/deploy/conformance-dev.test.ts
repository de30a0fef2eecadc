import { describeConformance } from './conformance-suite.js';

describeConformance('dev');

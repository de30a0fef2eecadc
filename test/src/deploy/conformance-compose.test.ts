import { describeConformance } from './conformance-suite.js';

describeConformance('compose');

export { createTempDatabase, testServerUrl, useTempDatabase, type TempDatabase } from './temp-database.js';

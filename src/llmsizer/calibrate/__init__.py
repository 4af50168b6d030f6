"""Calibration: measurements in, fitted step costs out, and how well they predict.

- `readers`: result files of `llmsizer bench`, vLLM, AIPerf and guidellm as records;
- `measurements`: the published calibration set as cases (a `PredictSpec` and what was
  measured for it);
- `record`, `replay`, `fit`, `gpu_fit`: the GPU model's efficiency factors fitted by
  re-pricing recorded schedules;
- `step_fit`, `step_calibration`: a linear step cost fitted to one server's sweep (for a
  server the roofline cannot describe), and its file;
- `validation`, `compare`: predicted against measured, as reports.

Imports point one way: `instance <- calibrate`, as `instance <- sizing`; neither sees the
other.
"""

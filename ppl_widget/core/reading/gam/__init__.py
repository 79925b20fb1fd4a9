"""Generalized additive models fitted as R's mgcv fits a Gaussian ``gam()``: cr smooths and
their tensor products, sum-to-zero constraints, smoothness by GCV or REML (numpy only).

formula.py parses terms; basis.py, tensor.py and smooth.py build mgcv's bases and
penalties; design.py lays out the model matrix; gcv.py and magic.py choose the smoothing
parameters by GCV, reml.py, stable_penalty.py and newton.py by REML; fit.py is the fitted
model (coefficients, edf, sigma, prediction), effect.py its term effects, held_out.py and
reading.py the cross-validated ΔLL.
"""

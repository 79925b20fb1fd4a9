"""Generalized additive models fitted as R's mgcv fits a Gaussian ``gam()``: cr smooths and
their tensor products, sum-to-zero constraints, smoothness by GCV (numpy only).

formula.py parses terms; basis.py, tensor.py and smooth.py build mgcv's bases and
penalties; design.py lays out the model matrix; gcv.py chooses the smoothing parameters;
fit.py is the fitted model (coefficients, edf, sigma, prediction, term effects).
"""

"""nslb: experiments with non-stationary latent bandits (Hong et al., AISTATS 2021)."""

__version__ = "0.1.0"
